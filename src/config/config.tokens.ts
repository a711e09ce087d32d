/** Injection token of the validated RouterConfig. */
export const ROUTER_CONFIG = Symbol('ROUTER_CONFIG');
