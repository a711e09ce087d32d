import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config';
import { adminServedOn } from './admin-placement';

/** Says at start where the admin API is, or that it is off, so nobody has to guess. */
@Injectable()
export class AdminAnnouncer implements OnApplicationBootstrap {
  private readonly logger = new Logger('Admin');

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  onApplicationBootstrap(): void {
    const placement = adminServedOn(this.config);
    if (placement === 'disabled') this.logger.log('admin API disabled (set admin.token or DISAGG_ADMIN_TOKEN to enable it)');
    else if (placement === 'main') this.logger.log('admin API served on the main port under /admin/v1 (docs at /admin/docs)');
    // On its own port, AdminPortHost logs the address once it listens.
    if (placement !== 'disabled' && this.config.admin.persist_file) this.logger.log(`admin changes persisted to ${this.config.admin.persist_file}`);
  }
}
