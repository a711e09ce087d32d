import { Logger } from '@nestjs/common';
import type { AppConfig, ServerRole } from '../config';
import { requestContextStorage } from '../observability/context/request-context';
import type { RequestHeaders, SubagentAffinity } from '../routing';
import {
  DISAGG_AUTH_HEADER, SUBAGENT_AFFINITY_AUTH_HEADER, SUBAGENT_AFFINITY_HEADER, handoffSignature, needsHandoffAuth, subagentAffinitySignature,
} from './disagg-auth';

type Body = Readonly<Record<string, unknown>>;

/** What a worker call carries that its signatures cover. */
export interface SignedCall {
  role: ServerRole;
  /** The body sent: its model and conversation_params.conversation_id. */
  body: Body;
  /** Its disaggregated_params as sent (undefined: none). */
  params: Body | undefined;
  affinity: SubagentAffinity | undefined;
}

/**
 * The signed headers of the calls to the workers, as TensorRT-LLM's disaggregated server sends
 * them (see docs/protocol.md "Signed handoff"): `x-trtllm-disagg-auth` on a generation call
 * handing over a KV cache, the sub-agent affinity hint and its signature on the calls of the
 * pools the hint covers. Without a key, handoffs go unsigned with TensorRT-LLM's warning.
 */
export class RequestSigner {
  private readonly logger = new Logger('SignedHandoff');
  private readonly key: string | undefined;
  private readonly affinityHeader: string | undefined;
  private readonly affinityRoles: readonly ServerRole[];
  private warned = false;

  constructor(config: Pick<AppConfig, 'internal_request_auth_key' | 'conversation_affinity_header_for_subagents' | 'subagent_affinity_scope'>) {
    this.key = config.internal_request_auth_key ?? undefined;
    this.affinityHeader = config.conversation_affinity_header_for_subagents?.toLowerCase();
    this.affinityRoles = config.subagent_affinity_scope === 'both' ? ['context', 'generation'] : ['context'];
  }

  /** The parent session id the configured gateway header carries, trimmed; undefined when none. */
  affinityOf(headers: RequestHeaders | undefined): SubagentAffinity | undefined {
    if (!this.affinityHeader || !headers) return undefined;
    const raw = headers[this.affinityHeader];
    const id = (Array.isArray(raw) ? raw[0] : raw)?.trim();
    return id ? { id, roles: this.affinityRoles } : undefined;
  }

  /** The headers to add to this call, or undefined when it needs none. */
  headersFor(call: SignedCall): Record<string, string> | undefined {
    let out: Record<string, string> | undefined;
    if (call.role === 'generation' && needsHandoffAuth(call.params)) {
      if (this.key) out = { [DISAGG_AUTH_HEADER]: handoffSignature(this.key, call.params!) };
      else this.warnUnsigned();
    }
    const affinity = call.affinity;
    // The config check makes a key present whenever an affinity header is configured.
    if (affinity && this.key && affinity.roles.includes(call.role)) {
      const conversation = call.body.conversation_params as Body | undefined;
      out ??= {};
      out[SUBAGENT_AFFINITY_HEADER] = affinity.id;
      out[SUBAGENT_AFFINITY_AUTH_HEADER] = subagentAffinitySignature(this.key, {
        role: call.role,
        model: call.body.model,
        conversationId: conversation?.conversation_id,
        affinityId: affinity.id,
        requestType: call.params?.request_type,
        disaggRequestId: call.params?.disagg_request_id,
      });
    }
    return out;
  }

  private warnUnsigned(): void {
    if (this.warned) return;
    this.warned = true;
    // A process-wide notice, though a request's handoff prompted it: not tagged with that request's id.
    requestContextStorage.exit(() =>
      this.logger.warn(
        'KV handoffs go unsigned: internal_request_auth_key is not set. TensorRT-LLM warns that a future release will require it; workers configured with a key refuse unsigned handoffs',
      ),
    );
  }
}
