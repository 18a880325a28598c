/**
 * Security headers on every response (`@fastify/helmet`), so no page of the service can be framed
 * (clickjacking Retry, Abandon or an answer on /ui or Bull Board), sniffed as another type, or leak its URL
 * in a Referer:
 *   Content-Security-Policy  frame-ancestors 'none'; scripts, styles, images and connections from this origin
 *   X-Frame-Options          DENY (browsers without frame-ancestors)
 *   X-Content-Type-Options   nosniff
 *   Referrer-Policy          no-referrer
 * Nothing is loaded from another origin (the pages must work offline and leak nothing to third parties):
 * Bull Board's Google Fonts link is dropped from its page (admin.ts), so fonts come from this origin or `data:`
 * only. Bull Board's page carries inline `style` attributes and a `<style>` block: styles allow those; scripts
 * stay 'self' only (its one inline `<script>` is JSON data, never run). HSTS is left to the TLS-terminating proxy (the service itself speaks plain HTTP), and insecure requests
 * are not upgraded (a plain-HTTP deployment must keep loading its own assets).
 */
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

/** The Content-Security-Policy directives of every page. */
export const CONTENT_SECURITY_POLICY = {
  defaultSrc: ["'self'"],
  baseUri: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  objectSrc: ["'none'"],
  scriptSrc: ["'self'"],
  scriptSrcAttr: ["'none'"],
  styleSrc: ["'self'", "'unsafe-inline'"],
  fontSrc: ["'self'", 'data:'],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  upgradeInsecureRequests: null,
};

const HELMET_OPTIONS: FastifyHelmetOptions = {
  global: true,
  contentSecurityPolicy: { useDefaults: false, directives: CONTENT_SECURITY_POLICY },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  noSniff: true,
  strictTransportSecurity: false,
};

/** Registers the security headers on `app` itself (not a child context: every route, errors and 404s included). */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.register(helmet, HELMET_OPTIONS);
}
