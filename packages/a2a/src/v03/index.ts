/**
 * The A2A 0.3 adapter: the 0.3 JSON-RPC and HTTP+JSON transports (in `defaultTransports`). Everything they return
 * is the 1.0 model.
 */
export { A2A_VERSION_V03, JSON_RPC_METHODS_V03, JsonRpcV03Transport, errorFromJsonRpcV03 } from './jsonrpc.ts';
export { REST_V03_PREFIX, RestV03Transport, errorFromHttpV03 } from './rest.ts';
