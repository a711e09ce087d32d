// The part of autocannon's API the fallback driver uses (the package ships no types).
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    duration?: number;
  }
  interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    requests: { total: number };
    latency: { p50: number; p99: number };
  }
  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): unknown;
  export default autocannon;
}
