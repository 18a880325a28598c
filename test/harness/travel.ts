/**
 * The travel scenario's cast, shared by the saga tests and `pnpm demo`: a
 * booking service (the independent system of record, keyed by our
 * messageId), flight and hotel agents that book and cancel there, and car
 * agents. A compensation message carries `durableA2a.compensates.messageId`
 * in its metadata; the agents cancel that booking.
 */
import { z } from 'zod';
import { httpVerifier, type Verifier } from '@durable-a2a/workers';
import type { Producer } from '@durable-a2a/producer';
import { startDemoAgent, type DemoAgentHandle, type DemoAgentOptions } from './agent.ts';
import { asksForInput, completionSteps, rejects, type AgentRequest, type Behaviour, type Step } from './agent-behaviours.ts';
import { book, cancelBooking, startBookingService, type BookingServiceHandle } from './booking-service.ts';

/** The booking that a compensation message asks to undo, if it is one. */
export function compensatedMessageId(request: AgentRequest): string | undefined {
  const durable = request.metadata?.durableA2a as { compensates?: { messageId?: string } } | undefined;
  return durable?.compensates?.messageId;
}

/** Books `kind` keyed by our messageId, or cancels the booking a compensation names. */
export function bookingBehaviour(bookingUrl: string, kind: string, options: { workMs?: number; bookWithoutClaim?: boolean; claimWithoutBooking?: boolean } = {}): Behaviour {
  return (request) => {
    const undo = compensatedMessageId(request);
    if (undo) return [{ state: 'WORKING' }, { sideEffect: () => cancelBooking(bookingUrl, undo) }, ...completionSteps(`cancelled ${kind}`)];
    const steps: Step[] = [{ state: 'WORKING' }, { delayMs: options.workMs ?? 100 }];
    if (!options.claimWithoutBooking) steps.push({ sideEffect: async () => void (await book(bookingUrl, request.messageId, kind, { text: request.text })) });
    if (options.bookWithoutClaim) return [...steps, { delayMs: 50 }, { state: 'FAILED', text: `${kind} system error after booking` }];
    return [...steps, ...completionSteps(`${kind} booked`)];
  };
}

/** A hotel that asks "two rooms or one?" first, then books. */
export function hotelBehaviour(bookingUrl: string): Behaviour {
  const booking = bookingBehaviour(bookingUrl, 'hotel');
  // The booking is keyed by the messageId of the request that opened the task, not by the reply's.
  const openedBy = new Map<string, string>();
  return (request) => {
    if (compensatedMessageId(request)) return booking(request);
    if (!request.isFollowUp) openedBy.set(request.taskId, request.messageId);
    return asksForInput('two rooms or one?', (answer, followUp) => [
      { state: 'WORKING' },
      { sideEffect: async () => void (await book(bookingUrl, openedBy.get(followUp.taskId) ?? followUp.messageId, 'hotel', { rooms: answer })) },
      ...completionSteps(`hotel booked: ${answer}`),
    ])(request);
  };
}

/** The verifier the travel workflow declares: a GET on the booking service. */
export function bookingVerifier(bookingUrl: string): Verifier {
  return httpVerifier({
    urlTemplate: `${bookingUrl}/bookings/{subjectMessageId}`,
    responseSchema: z.object({ status: z.enum(['booked', 'cancelled']) }),
    effectOf: (body) => (body.status === 'booked' ? 'present' : 'absent'),
  });
}

/** The same verifier for a worker process: the `DA2A_HTTP_VERIFIERS` JSON naming it `booking`. */
export const travelVerifierEnvironment = (bookingUrl: string): string =>
  JSON.stringify({ booking: { urlTemplate: `${bookingUrl}/bookings/{subjectMessageId}`, effectField: 'status', presentValues: ['booked'] } });

const skill = (id: string) => ({ id, name: id, description: `Can ${id}`, tags: ['travel'] });

export interface TravelCast {
  bookings: BookingServiceHandle;
  flight: DemoAgentHandle;
  hotel: DemoAgentHandle;
  car1: DemoAgentHandle;
  car2: DemoAgentHandle;
  close(): Promise<void>;
}

/** Starts the booking service and the four agents. `car2` defaults to rejecting too. */
export interface TravelCastOptions {
  car2?: Behaviour;
  agent?: Partial<DemoAgentOptions>;
  /** Fixed ports (docker compose); default any free port. */
  ports?: { bookings?: number; flight?: number; hotel?: number; car1?: number; car2?: number };
  /** Bind address and the host name written into URLs. Default 127.0.0.1. */
  host?: string;
  publicHost?: string;
}

export async function startTravelCast(options: TravelCastOptions = {}): Promise<TravelCast> {
  const where = { host: options.host, publicHost: options.publicHost };
  const ports = options.ports ?? {};
  const bookings = await startBookingService({ port: ports.bookings, ...where });
  const flight = await startDemoAgent({ name: 'Flight agent', skills: [skill('book-flight')], behaviour: bookingBehaviour(bookings.url, 'flight'), port: ports.flight, ...where, ...options.agent });
  const hotel = await startDemoAgent({ name: 'Hotel agent', skills: [skill('book-hotel')], behaviour: hotelBehaviour(bookings.url), port: ports.hotel, ...where, ...options.agent });
  const car1 = await startDemoAgent({ name: 'Car agent 1', skills: [skill('rent-car')], behaviour: rejects('no cars left at this location'), port: ports.car1, ...where, ...options.agent });
  const car2 = await startDemoAgent({ name: 'Car agent 2', skills: [skill('rent-car')], behaviour: options.car2 ?? rejects('fleet fully booked'), port: ports.car2, ...where, ...options.agent });
  return {
    bookings,
    flight,
    hotel,
    car1,
    car2,
    async close() {
      await Promise.all([flight.close(), hotel.close(), car1.close(), car2.close(), bookings.close()]);
    },
  };
}

/** Registers the cast's four agents with `producer` (the workflow names skills, not agents). */
export async function registerTravelCast(producer: Producer, cast: TravelCast): Promise<void> {
  for (const agent of [cast.flight, cast.hotel, cast.car1, cast.car2]) await producer.registerAgent(agent.cardUrl);
}

/** The travel workflow definition: flight, hotel, car; each booking step verified and compensated. */
export function travelWorkflow(workflowId: string, options: { maxAttemptsPerStep?: number; parallelFlightAndHotel?: boolean } = {}) {
  const verifier = { name: 'booking', params: {} };
  // In parallel: flight and hotel start at once, the car waits for both.
  const hotelAfter = options.parallelFlightAndHotel ? { after: [] as string[] } : {};
  const carAfter = options.parallelFlightAndHotel ? { after: ['flight', 'hotel'] } : {};
  return {
    workflowId,
    maxAttemptsPerStep: options.maxAttemptsPerStep ?? 3,
    steps: [
      {
        name: 'flight',
        skill: 'book-flight',
        message: { text: 'Book a flight LHR to JFK on 2026-12-20' },
        verifier,
        compensation: { skill: 'book-flight', message: { text: 'Cancel the flight booking' }, verifier },
      },
      {
        name: 'hotel',
        ...hotelAfter,
        skill: 'book-hotel',
        message: { text: 'Book a hotel in Manhattan for 3 nights' },
        verifier,
        compensation: { skill: 'book-hotel', message: { text: 'Cancel the hotel booking' }, verifier },
      },
      { name: 'car', ...carAfter, skill: 'rent-car', message: { text: 'Rent a car at JFK' } },
    ],
  };
}
