/**
 * The scraper's own process (scraper-process.ts forks it): a Scraper (scraper.ts) of the
 * addresses in its argument, turned on and off, read and closed over IPC. It does nothing else,
 * as Prometheus or a dashboard does nothing of the members' work: an answer it reads late
 * because the bench's own work held its event loop would count against the member.
 */
import { answerRequests, sendToParent } from './bench-child.js';
import { Scraper } from './scraper.js';

export type ScraperRequest = { readonly id: number; readonly cmd: 'on' | 'off' | 'stats' | 'take-stats' | 'close' };

const addresses = JSON.parse(process.argv[2] ?? '[]') as string[];
const scraper = new Scraper(addresses);

async function handle(req: ScraperRequest): Promise<unknown> {
  switch (req.cmd) {
    case 'on':
      scraper.on();
      return null;
    case 'off':
      await scraper.off();
      return null;
    case 'stats':
      return scraper.stats();
    case 'take-stats':
      return scraper.takeStats();
    case 'close':
      // Nothing is left to keep it alive once the parent lets go of the channel.
      await scraper.close();
      return null;
  }
}

answerRequests(handle);
sendToParent({ event: 'ready' });
