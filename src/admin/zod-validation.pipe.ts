import { PipeTransform } from '@nestjs/common';
import type { z } from 'zod';
import { invalidRequest } from '../common';

/**
 * Validates a request value with a zod schema; failures are OpenAI-style 400s naming the
 * field. Without a name the value is the request body, which must be a JSON object.
 */
export class ZodValidationPipe<S extends z.ZodType> implements PipeTransform<unknown, z.output<S>> {
  constructor(
    private readonly schema: S,
    /** The path or query parameter validated (its name prefixes `param` in errors). */
    private readonly name?: string,
  ) {}

  transform(value: unknown): z.output<S> {
    if (this.name === undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) {
      throw invalidRequest('the request body must be a JSON object', null, 'invalid_body');
    }
    const parsed = this.schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const path = [this.name, ...issue.path.map(String)].filter((p) => p !== undefined && p !== '').join('.');
    const code = issue.code === 'unrecognized_keys' ? 'unknown_parameter' : issue.code === 'invalid_type' && issue.input === undefined ? 'missing_required_parameter' : 'invalid_value';
    const message = issue.code === 'unrecognized_keys'
      ? `unknown field(s): ${issue.keys.join(', ')}`
      : `${path ? `'${path}' ` : ''}${issue.input === undefined && issue.code === 'invalid_type' ? 'is required' : issue.message}`;
    throw invalidRequest(message, path || null, code);
  }
}
