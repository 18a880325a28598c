/**
 * The demo cast as a long-running service (docker compose's `demo-agents`):
 * the booking service and the flight, hotel and two car agents. Ports and
 * host names come from the environment; card URLs are printed at start.
 *   DEMO_HOST (bind, default 127.0.0.1), DEMO_PUBLIC_HOST (in URLs, default 127.0.0.1),
 *   DEMO_BOOKING_PORT (7000), DEMO_FLIGHT_PORT (7001), DEMO_HOTEL_PORT (7002), DEMO_CAR1_PORT (7003), DEMO_CAR2_PORT (7004)
 */
import { z } from 'zod';
import { startTravelCast } from '../test/harness/travel.ts';
import { quietSdkConsole } from '../test/harness/quiet-sdk.ts';

quietSdkConsole();

const Port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const environment = z
  .object({
    DEMO_HOST: z.string().default('127.0.0.1'),
    DEMO_PUBLIC_HOST: z.string().default('127.0.0.1'),
    DEMO_BOOKING_PORT: Port(7000),
    DEMO_FLIGHT_PORT: Port(7001),
    DEMO_HOTEL_PORT: Port(7002),
    DEMO_CAR1_PORT: Port(7003),
    DEMO_CAR2_PORT: Port(7004),
  })
  .parse(process.env);

const cast = await startTravelCast({
  host: environment.DEMO_HOST,
  publicHost: environment.DEMO_PUBLIC_HOST,
  ports: {
    bookings: environment.DEMO_BOOKING_PORT,
    flight: environment.DEMO_FLIGHT_PORT,
    hotel: environment.DEMO_HOTEL_PORT,
    car1: environment.DEMO_CAR1_PORT,
    car2: environment.DEMO_CAR2_PORT,
  },
});
console.log(
  JSON.stringify({
    bookings: cast.bookings.url,
    agents: [cast.flight, cast.hotel, cast.car1, cast.car2].map((agent) => ({ name: agent.card.name, cardUrl: agent.cardUrl })),
  }),
);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void cast.close().then(() => process.exit(0)));
