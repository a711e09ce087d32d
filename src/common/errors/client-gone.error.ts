/** Raised when the client went away: no answer is owed, upstream calls were aborted. */
export class ClientGoneError extends Error {
  constructor() {
    super('client disconnected');
    this.name = 'ClientGoneError';
  }
}
