import { summarizeProfile } from './lib/cpuprofile';

/** `node dist-bench/test/bench/cpuprofile-top.js FILE [N]`: a .cpuprofile's top self time. */
const [file, n] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: cpuprofile-top FILE.cpuprofile [TOP]\n');
  process.exit(2);
}
process.stdout.write(`${summarizeProfile(file, Number(n ?? 30))}\n`);
