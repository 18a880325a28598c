/**
 * Protocol buffer codec of the gRPC binding (spec §10). Messages are described
 * by the vendored `proto/` files (compiled into `descriptor-set.ts`) and
 * converted with the canonical ProtoJSON mapping, which is exactly the 1.0 JSON
 * model of `schema.ts` (camelCase names, enum names, Struct as JSON, bytes as
 * base64), so gRPC answers are validated with the same zod schemas as JSON-RPC.
 */
import { createFileRegistry, fromBinary, fromJson, toBinary, toJson, type DescMessage, type DescMethod, type DescService, type JsonValue } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { InvalidAgentResponseError, InvalidParamsError } from '../errors.ts';
import { DESCRIPTOR_SET_BASE64 } from './descriptor-set.ts';

/** The protobuf registry of the vendored A2A 1.0, A2A 0.3 and google.rpc files. */
export const GRPC_REGISTRY = createFileRegistry(fromBinary(FileDescriptorSetSchema, Buffer.from(DESCRIPTOR_SET_BASE64, 'base64')));

/** Fully qualified service names: 1.0 is `lf.a2a.v1`, 0.3 kept the package `a2a.v1`. */
export const GRPC_SERVICE_NAMES = { '1.0': 'lf.a2a.v1.A2AService', '0.3': 'a2a.v1.A2AService' } as const;

/** The message type `typeName` (fully qualified). Throws on a name the descriptor set lacks (a bug, not input). */
export function messageType(typeName: string): DescMessage {
  const found = GRPC_REGISTRY.getMessage(typeName);
  if (!found) throw new Error(`unknown protobuf message ${typeName}`);
  return found;
}

/** The service `serviceName` (fully qualified). */
export function serviceType(serviceName: string): DescService {
  const found = GRPC_REGISTRY.getService(serviceName);
  if (!found) throw new Error(`unknown gRPC service ${serviceName}`);
  return found;
}

/** The method `name` of `service`, e.g. `SendMessage`. */
export function methodOf(service: DescService, name: string): DescMethod {
  const found = service.methods.find((method) => method.name === name);
  if (!found) throw new Error(`gRPC service ${service.typeName} has no method ${name}`);
  return found;
}

/** The gRPC path of a method: `/package.Service/Method` (gRPC over HTTP/2 `:path`). */
export const methodPath = (method: DescMethod): string => `/${method.parent.typeName}/${method.name}`;

/**
 * Encodes a request given in its ProtoJSON form. A field the message does not
 * have is our own bug or a caller's, so it is refused: `InvalidParamsError`.
 */
export function encodeFromJson(type: DescMessage, json: unknown): Buffer {
  try {
    return Buffer.from(toBinary(type, fromJson(type, json as JsonValue, { ignoreUnknownFields: false, registry: GRPC_REGISTRY })));
  } catch (error) {
    throw new InvalidParamsError(`cannot encode ${type.typeName}: ${(error as Error).message}`, { cause: error, delivery: 'not-sent' });
  }
}

/**
 * Decodes a response into its ProtoJSON form (fields at their default value are
 * omitted, as ProtoJSON writers do). Bytes that are not a valid message:
 * `InvalidAgentResponseError` (delivery `received`: the bytes are the agent's answer).
 */
export function decodeToJson(type: DescMessage, bytes: Uint8Array): unknown {
  try {
    return toJson(type, fromBinary(type, bytes), { registry: GRPC_REGISTRY });
  } catch (error) {
    throw new InvalidAgentResponseError(`cannot decode ${type.typeName}: ${(error as Error).message}`, { cause: error, delivery: 'received' });
  }
}
