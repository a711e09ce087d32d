type AbortListener = () => void;

/**
 * A request-scoped abort flag that undici takes as a request's signal: undici accepts any
 * emitter with `aborted`, `reason`, `on`/`once` and `removeListener`. One per client
 * request, shared by its upstream calls. Cheaper than an AbortController per request (the
 * EventTarget machinery of creating a signal and adding and removing its listeners was
 * some 4% of the router's CPU per request); consumers that need a real AbortSignal get one,
 * made on first use.
 */
export class AbortHandle {
  aborted = false;
  reason: unknown = undefined;
  private listeners: AbortListener[] | undefined;
  private controller: AbortController | undefined;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
    this.controller?.abort(this.reason);
  }

  /** An AbortSignal that follows this handle, for APIs that take only a real signal. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  // The emitter surface undici uses. 'abort' fires at most once, so on and once are alike.
  on(event: 'abort', listener: AbortListener): this {
    if (event === 'abort' && !this.aborted) (this.listeners ??= []).push(listener);
    return this;
  }

  once(event: 'abort', listener: AbortListener): this {
    return this.on(event, listener);
  }

  removeListener(event: 'abort', listener: AbortListener): this {
    const listeners = this.listeners;
    if (event !== 'abort' || !listeners) return this;
    const i = listeners.lastIndexOf(listener);
    if (i >= 0) listeners.splice(i, 1);
    return this;
  }

  off(event: 'abort', listener: AbortListener): this {
    return this.removeListener(event, listener);
  }

  /** Listeners waiting for the abort (upstream calls in flight), for leak checks. */
  get listenerCount(): number {
    return this.listeners?.length ?? 0;
  }
}
