/**
 * The gRPC transport `grpcTransports` builds: it loads `@grpc/grpc-js`,
 * `@bufbuild/protobuf` and the descriptor set on its first call, so a process
 * that never talks gRPC does not pay their import at start-up (0.5 to 1 s on a
 * loaded 2-core machine, measured; workers restart often under chaos).
 */
import type { A2ATransport, AgentInterface, EventStream } from '../transport.ts';
import type { GrpcTransport, GrpcTransportOptions } from './transport.ts';

async function loadTransport(agentInterface: AgentInterface, options: GrpcTransportOptions, protocolVersion: '1.0' | '0.3'): Promise<GrpcTransport> {
  const [{ GrpcTransport: Transport }, { GRPC_V03_MAPPING }] = await Promise.all([import('./transport.ts'), import('./v03.ts')]);
  return protocolVersion === '0.3' ? new Transport(agentInterface, options, GRPC_V03_MAPPING) : new Transport(agentInterface, options);
}

/** `A2ATransport` over gRPC (1.0 or 0.3), loading the binding on first use. `close()` releases its connections. */
export class LazyGrpcTransport implements A2ATransport {
  readonly binding = 'GRPC' as const;
  readonly url: string;
  private loaded: Promise<GrpcTransport> | undefined;

  constructor(
    private readonly agentInterface: AgentInterface,
    private readonly options: GrpcTransportOptions,
    readonly protocolVersion: '1.0' | '0.3',
  ) {
    this.url = agentInterface.url;
  }

  private transport(): Promise<GrpcTransport> {
    this.loaded ??= loadTransport(this.agentInterface, this.options, this.protocolVersion);
    return this.loaded;
  }

  private async *streamOf(open: (transport: GrpcTransport) => EventStream): EventStream {
    return yield* open(await this.transport());
  }

  /** Closes the connections, if any were opened. */
  close(): void {
    void this.loaded?.then((transport) => transport.close());
  }

  sendMessage: A2ATransport['sendMessage'] = async (request, options) => (await this.transport()).sendMessage(request, options);
  sendStreamingMessage: A2ATransport['sendStreamingMessage'] = (request, options) => this.streamOf((transport) => transport.sendStreamingMessage(request, options));
  getTask: A2ATransport['getTask'] = async (params, options) => (await this.transport()).getTask(params, options);
  listTasks: A2ATransport['listTasks'] = async (request, options) => (await this.transport()).listTasks(request, options);
  cancelTask: A2ATransport['cancelTask'] = async (params, options) => (await this.transport()).cancelTask(params, options);
  subscribeToTask: A2ATransport['subscribeToTask'] = (params, options) => this.streamOf((transport) => transport.subscribeToTask(params, options));
  createTaskPushNotificationConfig: A2ATransport['createTaskPushNotificationConfig'] = async (config, options) =>
    (await this.transport()).createTaskPushNotificationConfig(config, options);
  getTaskPushNotificationConfig: A2ATransport['getTaskPushNotificationConfig'] = async (params, options) =>
    (await this.transport()).getTaskPushNotificationConfig(params, options);
  listTaskPushNotificationConfigs: A2ATransport['listTaskPushNotificationConfigs'] = async (params, options) =>
    (await this.transport()).listTaskPushNotificationConfigs(params, options);
  deleteTaskPushNotificationConfig: A2ATransport['deleteTaskPushNotificationConfig'] = async (params, options) =>
    (await this.transport()).deleteTaskPushNotificationConfig(params, options);
}
