/**
 * Integration test harness: the test kit (@durable-a2a/testing: private
 * redis-server, scripted SDK agents, raw wire agents) plus what only this
 * suite uses: vitest hooks, a Redis Cluster, the booking system of record.
 */
export * from '@durable-a2a/testing';
export { testsOnCluster, useRedisClient, useRedisServer } from './redis.ts';
export type { RedisClientHookOptions } from './redis.ts';
export { startRedisCluster } from './redis-cluster.ts';
export type { RedisClusterHandle } from './redis-cluster.ts';
export { useDemoAgent } from './agent.ts';
export { book, cancelBooking, startBookingService } from './booking-service.ts';
export type { Booking, BookingCounts, BookingServiceHandle } from './booking-service.ts';
export { findFreePort } from './ports.ts';
export { type VoltAgentHandle, startVoltAgent } from './voltagent-agent.ts';
export { type MastraAgentHandle, startMastraAgent } from './mastra-agent.ts';
