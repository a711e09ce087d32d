import { afterEach, describe, expect, it } from '@jest/globals';
import { REQUEST_TEMPLATE_BOUNDS, RequestTemplateError, RequestTemplateSandbox, type RequestTemplateBounds } from '../../src/tokenizer/hf/request-template-sandbox';

/** What a render failed with: its code, as the client gets it. */
async function failure(p: Promise<string>): Promise<{ status: number; code: string | null; message: string }> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(RequestTemplateError);
    const e = err as RequestTemplateError;
    return { status: e.getStatus(), code: e.body.error.code, message: e.body.error.message };
  }
  throw new Error('the render succeeded');
}

describe('the request-template sandbox', () => {
  const sandboxes: RequestTemplateSandbox[] = [];
  const sandbox = (bounds: Partial<RequestTemplateBounds> = {}): RequestTemplateSandbox => {
    const s = new RequestTemplateSandbox({ ...REQUEST_TEMPLATE_BOUNDS, ...bounds });
    sandboxes.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of sandboxes.splice(0)) await s.close();
  });

  it('renders a chat template with the given variables', async () => {
    const s = sandbox();
    const text = await s.render("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}", {
      messages: [{ role: 'user', content: 'hi' }],
      add_generation_prompt: true,
    });
    expect(text).toBe('<user>hi<assistant>');
    expect(await s.render('{{ range(3)|join(",") }}|{{ range(1, 7, 2)|join(",") }}|{{ range(3, 0, -1)|join(",") }}', {})).toBe('0,1,2|1,3,5|3,2,1');
  });

  it("strips as Python does: strip(chars) takes only those characters, trim keeps U+FEFF", async () => {
    const text = await sandbox().render("{{ s.lstrip('\\n') }}|{{ s.rstrip('\\n') }}|{{ s.strip() }}|{{ t | trim }}", { s: '\n x \n', t: '\ufeff y ' });
    expect(text).toBe(' x \n|\n x |x|\ufeff y');
  });

  it('refuses a range larger than Jinja sandbox allows, at once', async () => {
    const got = await failure(sandbox().render('{% for i in range(1000000000) %}x{% endfor %}', {}));
    expect(got).toMatchObject({ status: 400, code: 'chat_template_too_many_loops' });
    expect(got.message).toMatch(/^chat_template: range\(\) of 1000000000 items/);
  });

  it('stops nested loops at the block bound', async () => {
    const got = await failure(sandbox({ maxBlocks: 10_000, timeoutMs: 30_000 }).render('{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}', {}));
    expect(got.code).toBe('chat_template_too_many_loops');
  });

  it('stops a render that writes more than the output bound', async () => {
    const got = await failure(sandbox({ maxOutputChars: 10_000 }).render('{% for i in range(100000) %}{{ text }}{% endfor %}', { text: 'y'.repeat(100) }));
    expect(got.code).toBe('chat_template_too_large');
  });

  it('stops a render that runs past the time bound, and renders the next one on a new thread', async () => {
    const s = sandbox({ timeoutMs: 100 });
    const slow = '{% for i in range(100000) %}{% for j in range(9) %}{{ (messages|tojson)|length }}{% endfor %}{% endfor %}';
    const got = await failure(s.render(slow, { messages: [{ role: 'user', content: 'z'.repeat(20_000) }] }));
    expect(got.code).toBe('chat_template_too_slow');
    expect(await s.render('{{ 1 + 1 }}', {})).toBe('2');
  });

  it('answers a syntax error as a 400 naming the template', async () => {
    const got = await failure(sandbox().render('{% for %}', {}));
    expect(got).toMatchObject({ status: 400, code: 'invalid_chat_template' });
    expect(got.message).toMatch(/^chat_template: does not parse/);
  });

  it('answers template errors and runaway recursion as 400s', async () => {
    const s = sandbox();
    expect((await failure(s.render("{{ raise_exception('no system role') }}", {}))).message).toContain('no system role');
    const recursion = await failure(s.render('{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}', {}));
    expect(recursion.status).toBe(400);
    expect(await s.render('{{ "still" }}', {})).toBe('still');
  });

  it('refuses an over-long template without starting a render', async () => {
    const got = await failure(sandbox({ maxTemplateChars: 100 }).render('x'.repeat(101), {}));
    expect(got.code).toBe('chat_template_too_large');
  });

  it('ends a render that runs out of heap, not the process', async () => {
    const s = sandbox({ heapMb: 16, timeoutMs: 30_000 });
    const hog = '{% set ns = namespace(s=text) %}{% for i in range(30) %}{% set ns.s = (ns.s ~ ns.s)|upper %}{% endfor %}{{ ns.s|length }}';
    const got = await failure(s.render(hog, { text: 'w'.repeat(64) }));
    expect(got).toMatchObject({ status: 400, code: 'chat_template_too_large' });
    expect(await s.render('{{ "alive" }}', {})).toBe('alive');
  }, 60_000);
});
