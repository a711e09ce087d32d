export { AnthropicModule } from './anthropic.module';
export { countTokensToChat, messagesToChat, type ChatConversion } from './messages-request';
