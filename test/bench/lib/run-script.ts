/** Runs a bench script's main and exits with its outcome (0, or 1 after printing the error). */
export function runScript(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
