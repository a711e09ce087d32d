import { Module } from '@nestjs/common';
import { DisaggModule } from '../disagg/disagg.module';
import { ServersModule } from '../servers';
import { AnthropicController } from './anthropic.controller';
import { CountTokensForwarder } from './count-tokens-forwarder';

/**
 * The Anthropic Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`). Its
 * errors take Anthropic's shape through the app's exception filter, which picks the shape
 * by route.
 */
@Module({
  imports: [DisaggModule, ServersModule],
  controllers: [AnthropicController],
  providers: [CountTokensForwarder],
})
export class AnthropicModule {}
