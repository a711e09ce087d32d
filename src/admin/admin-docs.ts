import { Logger, type INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { AppConfig } from '../config';
import { AdminApiModule } from './admin-api.module';
import { ADMIN_BEARER } from './admin-controller.decorator';
import { adminServedOn } from './admin-placement';

export const ADMIN_DOCS_PATH = 'admin/docs';
export const ADMIN_DOCS_JSON_PATH = 'admin/docs-json';

/**
 * OpenAPI document of the admin API only, as JSON at /admin/docs-json and with its UI at
 * /admin/docs. The UI's assets are served by @fastify/static; where that package cannot be
 * loaded, the UI is left out instead of letting Swagger end the process.
 */
export async function mountAdminDocs(app: INestApplication): Promise<void> {
  const options = new DocumentBuilder()
    .setTitle('disagg-router admin API')
    .setDescription('Manage servers and routing policies at runtime. Every call needs the admin bearer token.')
    .setVersion('v1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'admin.token / DISAGG_ADMIN_TOKEN' }, ADMIN_BEARER)
    .build();
  const document = SwaggerModule.createDocument(app, options, { include: [AdminApiModule] });
  const ui = await staticAssetsAvailable();
  if (!ui) new Logger('Admin').warn('@fastify/static cannot be loaded: /admin/docs (UI) is off, /admin/docs-json is served');
  SwaggerModule.setup(ADMIN_DOCS_PATH, app, document, { jsonDocumentUrl: ADMIN_DOCS_JSON_PATH, raw: ['json'], ui });
}

/** For the main app: mounts the docs when the admin API is served on the main port. */
export async function mountAdminDocsOnMainApp(app: INestApplication, config: AppConfig): Promise<void> {
  if (adminServedOn(config) === 'main') await mountAdminDocs(app);
}

async function staticAssetsAvailable(): Promise<boolean> {
  try {
    await import('@fastify/static');
    return true;
  } catch {
    return false;
  }
}
