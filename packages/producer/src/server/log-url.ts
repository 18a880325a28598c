/**
 * What a request line logs of its URL: the path, and of the query only the parameters whose decoded name is one
 * the service reads for listings (their values carry no secret); every other parameter, name and value, is
 * `[redacted]`. Names are compared after percent-decoding, and `&` and `;` both separate parameters, so no
 * spelling of `token` (`to%6Ben`, `%74oken`, `TOKEN`, repeated, after a `;`) reaches a log line.
 */

/** Query parameters logged with their value (an allowlist: a parameter not listed is never logged). */
const LOGGED_QUERY_PARAMETERS: ReadonlySet<string> = new Set(['state', 'waiting', 'limit', 'cursor', 'waitMs', 'filter']);

/** A parameter name as a server decodes it (`+` is a space; malformed escapes make it unknown, so redacted). */
function decodedName(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return undefined;
  }
}

/** A path whose last segment is a secret (a signed answer link's token): logged as `[redacted]`. */
const SECRET_PATH = /^(\/answer\/)[^/?]*/;

/**
 * `url` (path and query, as in the request line) with every query parameter outside the allowlist redacted, and
 * the token of an answer link (`/answer/<token>`) too.
 */
export function logUrl(url: string): string {
  url = url.replace(SECRET_PATH, '$1[redacted]');
  const start = url.indexOf('?');
  if (start < 0) return url;
  const parameters = url
    .slice(start + 1)
    .split(/[&;]/)
    .filter((part) => part.length > 0)
    .map((part) => {
      const equals = part.indexOf('=');
      const name = decodedName(equals < 0 ? part : part.slice(0, equals));
      return name !== undefined && LOGGED_QUERY_PARAMETERS.has(name) ? part : '[redacted]';
    });
  return parameters.length > 0 ? `${url.slice(0, start)}?${parameters.join('&')}` : url.slice(0, start);
}
