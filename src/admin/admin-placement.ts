import type { AppConfig } from '../config';

/** Where the admin API lives: nowhere without a token, else the main port or its own. */
export function adminServedOn(config: AppConfig): 'disabled' | 'main' | 'own_port' {
  if (!config.admin.token) return 'disabled';
  return config.admin.port === undefined ? 'main' : 'own_port';
}
