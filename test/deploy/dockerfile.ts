/** A small reader of the Dockerfile instructions the deployment tests check. */
export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const logical = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of logical) {
    const [keyword, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (keyword.toUpperCase() === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!m) throw new Error(`bad FROM: ${line}`);
      stages.push({ from: m[1], name: m[2], instructions: [] });
      continue;
    }
    if (!stages.length) throw new Error(`${keyword} before FROM`);
    stages[stages.length - 1].instructions.push({ keyword: keyword.toUpperCase(), args });
  }
  return stages;
}

/** The exec form (`["a", "b"]`) of CMD, ENTRYPOINT or HEALTHCHECK ... CMD. */
export function execForm(args: string): string[] {
  const start = args.indexOf('[');
  if (start < 0) throw new Error(`not in exec form: ${args}`);
  const parsed = JSON.parse(args.slice(start)) as unknown;
  if (!Array.isArray(parsed) || !parsed.every((p) => typeof p === 'string')) throw new Error(`not a string array: ${args}`);
  return parsed as string[];
}

export function last(stage: Stage, keyword: string): Instruction | undefined {
  return [...stage.instructions].reverse().find((i) => i.keyword === keyword);
}

/** ENV lines as a map (`ENV A=1 B=2` form). */
export function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of stage.instructions.filter((x) => x.keyword === 'ENV')) {
    for (const pair of i.args.split(/\s+/)) {
      const eq = pair.indexOf('=');
      if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}
