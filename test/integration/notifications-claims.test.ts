import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/server/db/database.js';
import { migrate } from '../../src/server/db/migrate.js';
import { migrations } from '../../src/server/db/migrations/index.js';
import { openSqlite } from '../../src/server/db/sqlite.js';
import { claimDelivery, dueDeliveries, enqueueDeliveries, finishDelivery } from '../../src/server/notifications/outbox-store.js';
import { claimScheduled, insertNotification } from '../../src/server/notifications/store.js';
import { createApp, createOrganization } from '../../src/server/store/identity.js';

/**
 * Work that must happen once is claimed through the database: whichever
 * instance's UPDATE wins owns it, whatever the other instances hold in memory.
 */
describe('notification work is claimed through the database', () => {
  let db: Database;
  let appId: number;
  const t = (s: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, s)).toISOString();
  beforeEach(async () => {
    db = openSqlite({ memory: true });
    await migrate(db, migrations);
    appId = await createApp(db, await createOrganization(db, 'o', t(0)), 'a', t(0));
  });
  afterEach(() => db.close());

  it('a due scheduled notification is published by exactly one claimer, and not before its time', async () => {
    const n = await insertNotification(
      db,
      appId,
      { data: {}, scope: null, status: 'scheduled', orderAt: t(10), pushNotification: null, publishedAt: null },
      t(0),
    );
    expect(await claimScheduled(db, n.id, t(9))).toBe(false);
    const results = await Promise.all([claimScheduled(db, n.id, t(10)), claimScheduled(db, n.id, t(11))]);
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('a delivery is claimed once; a lost claim cannot record; an expired lease is taken over', async () => {
    const n = await insertNotification(
      db,
      appId,
      { data: {}, scope: null, status: 'published', orderAt: t(0), pushNotification: null, publishedAt: t(0) },
      t(0),
    );
    await enqueueDeliveries(db, { appId, notificationId: n.id, subscriptionIds: [1], payload: { title: 't', body: 'b' }, notBefore: t(5), now: t(0) });
    expect(await dueDeliveries(db, t(4), 10)).toEqual([]);
    const [id] = await dueDeliveries(db, t(5), 10);
    const a = await claimDelivery(db, id!, 'A', t(5), t(65));
    expect(a).toMatchObject({ id, attempts: 0, subscriptionId: 1 });
    expect(await claimDelivery(db, id!, 'B', t(6), t(66))).toBeUndefined();
    expect(await dueDeliveries(db, t(64), 10)).toEqual([]);
    const finish = (claimId: string, now: string) =>
      finishDelivery(db, { id: id!, claimId, attempt: 1, now, state: 'sent', badge: 0, error: null, attempted: true });
    expect(await finish('B', t(7))).toBe(false);
    // A's instance died: once its lease ran out, B takes the delivery over
    expect(await claimDelivery(db, id!, 'B', t(65), t(125))).toMatchObject({ id });
    expect(await finish('A', t(70))).toBe(false);
    expect(await finish('B', t(71))).toBe(true);
    expect(await dueDeliveries(db, t(1000), 10)).toEqual([]);
    expect(await claimDelivery(db, id!, 'C', t(1000), t(1060))).toBeUndefined();
  });
});
