/**
 * The A2A 0.3 adapter: registers the 0.3 JSON-RPC and HTTP+JSON transports
 * with the transport registry on import. Everything they return is the 1.0 model.
 */
import { registerTransport } from '../client.ts';
import { JsonRpcV03Transport } from './jsonrpc.ts';
import { RestV03Transport } from './rest.ts';

registerTransport('JSONRPC', '0.3', (agentInterface, options) => new JsonRpcV03Transport(agentInterface, options));
registerTransport('HTTP+JSON', '0.3', (agentInterface, options) => new RestV03Transport(agentInterface, options));

export { A2A_VERSION_V03, JSON_RPC_METHODS_V03, JsonRpcV03Transport, errorFromJsonRpcV03 } from './jsonrpc.ts';
export { REST_V03_PREFIX, RestV03Transport, errorFromHttpV03 } from './rest.ts';
