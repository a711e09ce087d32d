import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DisaggModule } from '../disagg/disagg.module';
import { ClusterController } from './cluster.controller';
import { OpenAiExceptionFilter } from './openai-exception.filter';
import { OpenAiController } from './openai.controller';

@Module({
  imports: [DisaggModule],
  controllers: [OpenAiController, ClusterController],
  providers: [{ provide: APP_FILTER, useClass: OpenAiExceptionFilter }],
})
export class OpenAiModule {}
