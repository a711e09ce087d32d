import { describe, expect, it } from '@jest/globals';
import { canonicalJson, handoffSignature, subagentAffinitySignature } from '../../src/disagg/disagg-auth';
import { expectedSignatures } from '../support/trtllm-signatures';

const KEY = 'sécret-🔑';

// The signed texts are compared through their signatures with the committed Python generator
// (json.dumps + hmac), so a difference in escaping or key order shows as a mismatch.
describe('signatures of TensorRT-LLM: the same bytes as Python signs', () => {
  it('handoff: both fields, either one, a listed endpoint, and strings Python escapes (non-ASCII, astral, control, quotes)', async () => {
    const cases: Array<Record<string, unknown>> = [
      { encoded_opaque_state: 'b3BhcXVl', ctx_info_endpoint: 'tcp://10.0.0.1:5000' },
      { encoded_opaque_state: 'b3BhcXVl' },
      { ctx_info_endpoint: ['tcp://10.0.0.1:5000', 'tcp://10.0.0.2:5000'] },
      { ctx_info_endpoint: [], encoded_opaque_state: 'x' },
      { encoded_opaque_state: 'é\u00ff\u0100 😀 \u007f\u0001\b\f\n\r\t "q" \\ / \u2028' },
    ];
    for (const params of cases) {
      const expected = await expectedSignatures(KEY, 'generation', { model: 'm', disaggregated_params: { request_type: 'generation_only', ...params } });
      expect(handoffSignature(KEY, params)).toBe(expected['x-trtllm-disagg-auth']);
    }
  });

  it('sub-agent affinity: role, model, conversation, request type and id all bound', async () => {
    const body = { model: 'módel', conversation_params: { conversation_id: 'child-ä' }, disaggregated_params: { request_type: 'context_only', disagg_request_id: 1099511627777 } };
    const expected = await expectedSignatures(KEY, 'context', body, 'parent-1');
    expect(subagentAffinitySignature(KEY, {
      role: 'context', model: 'módel', conversationId: 'child-ä', affinityId: 'parent-1', requestType: 'context_only', disaggRequestId: 1099511627777,
    })).toBe(expected['x-trtllm-subagent-affinity-auth']);
    // No conversation and no disaggregated_params (an aggregated call): nulls, as Python's None.
    const bare = await expectedSignatures(KEY, 'generation', { model: 'm' }, 'p');
    expect(subagentAffinitySignature(KEY, { role: 'generation', model: 'm', conversationId: undefined, affinityId: 'p', requestType: undefined, disaggRequestId: undefined }))
      .toBe(bare['x-trtllm-subagent-affinity-auth']);
  });

  it('writes keys sorted, compact, non-ASCII escaped', () => {
    expect(canonicalJson({ b: [1, 'é'], a: null, c: { z: true, y: undefined } })).toBe('{"a":null,"b":[1,"\\u00e9"],"c":{"y":null,"z":true}}');
  });
});
