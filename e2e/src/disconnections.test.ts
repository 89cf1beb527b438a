import { expect, it } from "vitest";
import { DisconnectionLog } from "../pages/disconnections.js";

it("a lost session opens a gap from the last frame's stamp that the next session's first frame closes", () => {
  const d = new DisconnectionLog();
  d.onFrame(1_000, 26_000);
  d.onFrame(2_000, 27_000);
  expect(d.disconnected).toBe(false);
  d.onLost(9_000_000, "session closed during the request: connection lost");
  expect(d.disconnected).toBe(true);
  expect(d.reconnects).toBe(0);
  // a reconnected session that dies before any frame is the same disconnection
  d.onLost(10_000_000, "again");
  d.onFrame(12_500_000, 12_526_000);
  expect(d.disconnected).toBe(false);
  expect(d.reconnects).toBe(1);
  expect(d.entries).toEqual([
    { reason: "session closed during the request: connection lost", lost_t_us: 9_000_000, last_send_us: 2_000, resumed_t_us: 12_526_000, first_send_us: 12_500_000, sessions_lost: 2 },
  ]);
});

it("a loss before any frame and one still open at the end are kept with nulls", () => {
  const d = new DisconnectionLog();
  d.onLost(5, "first session lost");
  d.onFrame(100, 200);
  d.onLost(300, "lost at the end");
  expect(d.entries.map((e) => [e.last_send_us, e.first_send_us])).toEqual([
    [null, 100],
    [100, null],
  ]);
  expect(d.reconnects).toBe(1);
  expect(d.disconnected).toBe(true);
});
