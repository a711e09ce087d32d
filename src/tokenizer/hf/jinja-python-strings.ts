/**
 * Python's `str.strip/lstrip/rstrip(chars)` and `trim` filter for @huggingface/jinja (README
 * "Native chat templates"). The engine (0.5.13) ignores the argument and trims all whitespace
 * (and JavaScript's whitespace, U+FEFF included, where Python's `str.isspace` differs), so
 * Qwen3's `content.split('</think>')[-1].lstrip('\n')` dropped the spaces and tabs that
 * transformers (Python's Jinja) keeps, and the router's ids of such a chat were not the
 * worker's. Plain JavaScript evaluated from a string, so the request-template thread (which
 * loads its own copy of the engine) patches its copy the same way.
 *
 * `patchJinjaPythonStrings(jinja)` patches the module's string methods once and returns
 * whether they now follow Python (false, with nothing changed, for an engine of another shape).
 */
export const JINJA_PYTHON_STRINGS_SOURCE = `
const patchedJinjaModules = new WeakMap();
function patchJinjaPythonStrings(jinja) {
  if (patchedJinjaModules.has(jinja)) return patchedJinjaModules.get(jinja);
  let done = false;
  try {
    const env = new jinja.Environment();
    env.set('s', '');
    const StringValue = env.lookupVariable('s').constructor;
    const proto = StringValue.prototype;
    const getter = Object.getOwnPropertyDescriptor(proto, 'builtins');
    const probe = getter && getter.get && getter.get.call(new StringValue(''));
    const FunctionValue = probe && probe.get('strip') && probe.get('strip').constructor;
    if (FunctionValue && probe.get('lstrip') && probe.get('rstrip')) {
      // Python's default set: str.isspace() (JavaScript's trim also takes U+FEFF, and not U+001C-U+001F).
      const SPACE = '\\t\\n\\v\\f\\r\\u001c\\u001d\\u001e\\u001f \\u0085\\u00a0\\u1680\\u2000\\u2001\\u2002\\u2003\\u2004\\u2005\\u2006\\u2007\\u2008\\u2009\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
      const charsOf = (args) => {
        const a = args && args[0];
        if (a === undefined || a.value === null || a.value === undefined) return SPACE;
        if (typeof a.value !== 'string') throw new Error('strip arg must be None or str');
        return a.value;
      };
      const left = (s, chars) => { let i = 0; while (i < s.length && chars.includes(s[i])) i++; return s.slice(i); };
      const right = (s, chars) => { let j = s.length; while (j > 0 && chars.includes(s[j - 1])) j--; return s.slice(0, j); };
      const patched = new WeakSet();
      Object.defineProperty(proto, 'builtins', {
        configurable: true,
        get() {
          const map = getter.get.call(this);
          if (!patched.has(map)) {
            patched.add(map);
            const value = this.value;
            map.set('strip', new FunctionValue((args) => { const c = charsOf(args); return new StringValue(right(left(value, c), c)); }));
            map.set('lstrip', new FunctionValue((args) => new StringValue(left(value, charsOf(args)))));
            map.set('rstrip', new FunctionValue((args) => new StringValue(right(value, charsOf(args)))));
          }
          return map;
        },
      });
      // The trim filter is Python's str.strip() too.
      const Interpreter = jinja.Interpreter;
      const applyFilter = Interpreter && Interpreter.prototype.applyFilter;
      if (typeof applyFilter === 'function') {
        Interpreter.prototype.applyFilter = function (operand, filterNode, environment) {
          if (operand instanceof StringValue && filterNode && filterNode.type === 'Identifier' && filterNode.value === 'trim') {
            return new StringValue(right(left(operand.value, SPACE), SPACE));
          }
          return applyFilter.call(this, operand, filterNode, environment);
        };
        done = true;
      }
    }
  } catch {
    done = false;
  }
  patchedJinjaModules.set(jinja, done);
  return done;
}
`;

/** The patch for this thread's copy of the engine. */
export const patchJinjaPythonStrings = new Function(`${JINJA_PYTHON_STRINGS_SOURCE}; return patchJinjaPythonStrings;`)() as (jinja: unknown) => boolean;
