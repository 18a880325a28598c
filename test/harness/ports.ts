/** Moved to @durable-a2a/testing (its whole surface); this path keeps existing imports working. */
export * from '@durable-a2a/testing';
