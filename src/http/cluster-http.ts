import type { EventEmitter } from 'node:events';
import type { ClusterState } from '../api/state.js';
import type { ClusterEvents } from '../cluster-events.js';
import { BearerAuth } from './auth.js';
import { dashboardRoute } from './dashboard.js';
import type { HttpSettings } from './http-options.js';
import { ClusterMetrics } from './metrics.js';
import { RouteTable } from './route-table.js';
import { actionRoutes, probeRoutes, readRoutes, type HttpSource } from './routes.js';
import { HttpServer, type HttpLimits } from './server.js';
import { StateJson } from './state-json.js';
import { StateWarmer } from './state-warmer.js';

/** What a member serves over HTTP (the `http` option): its routes, its metrics and the server. */
export class ClusterHttp {
  readonly metrics: ClusterMetrics;
  /** The routes served; a later feature adds its own (an action is one more route). */
  readonly routes: RouteTable;
  readonly #settings: HttpSettings;
  readonly #server: HttpServer;
  readonly #warmer: StateWarmer;

  /**
   * Counts `cluster`'s events from now on; serves nothing before `start()`. `jobs`: the jobs of
   * `cluster.state()` alone, which the warmer reads often (building the rest of the state each
   * time was most of its work).
   */
  constructor(cluster: HttpSource & Pick<EventEmitter<ClusterEvents>, 'on'>, settings: HttpSettings, jobs: () => ClusterState['jobs'], limits?: HttpLimits) {
    this.#settings = settings;
    this.metrics = new ClusterMetrics(cluster);
    cluster.on('leader', ({ leader, term }) => this.metrics.leaderSeen(leader, term));
    cluster.on('run', (run) => this.metrics.runEnded(run));
    cluster.on('blocked', (blocked) => this.metrics.loopBlocked(blocked));
    const metrics = this.metrics;
    const json = new StateJson();
    this.#warmer = new StateWarmer(jobs, json);
    this.routes = new RouteTable().add(
      ...probeRoutes(cluster),
      ...readRoutes(cluster, json),
      ...actionRoutes(cluster),
      dashboardRoute(),
      { method: 'GET', path: '/metrics', action: false, handle: async () => ({ text: await metrics.text(), contentType: metrics.contentType }) },
    );
    this.#server = new HttpServer(this.routes, new BearerAuth(settings.token), limits);
  }

  /** `host:port` served on once started (the port bound, when `listen` asked for 0); null before and after. */
  get address(): string | null {
    return this.#server.address;
  }

  /** @throws ListenError */
  async start(): Promise<void> {
    await this.#server.listen(this.#settings.host, this.#settings.port);
    this.#warmer.start();
  }

  async stop(): Promise<void> {
    this.#warmer.stop();
    await this.#server.close();
  }
}
