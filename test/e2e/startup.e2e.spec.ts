import { Controller, type INestMicroservice, Injectable } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type Backend, memoryBackend, Rheo, RheoConsumer, RheoError, RheoModule, RheoServer, type JsonValue } from '../../lib';
import { createMicroservice, startHybrid } from './support';

@Injectable()
class MisplacedService {
  @RheoConsumer({ stream: 'market-events', group: 'risk' })
  onTick(@Payload() tick: JsonValue) {
    void tick;
  }
}

@Controller()
class UnknownInstanceController {
  @RheoConsumer({ stream: 'market-events', group: 'risk', instance: 'audti' })
  onTick(@Payload() tick: JsonValue) {
    void tick;
  }
}

@Controller()
class RiskController {
  @RheoConsumer({ stream: 'market-events', group: 'risk', maxDemand: 0 })
  onCurve(@Payload() curve: JsonValue) {
    void curve;
  }
}

@Controller()
class PollController {
  @RheoConsumer({ stream: 'market-events', group: 'risk', leaseMs: 1000, pollMs: 1000 })
  onTick(@Payload() tick: JsonValue) {
    void tick;
  }
}

@Controller()
class TypoController {
  @RheoConsumer({ stream: 'market-events', group: 'risk', maxDemnd: 5 } as never)
  onTick(@Payload() tick: JsonValue) {
    void tick;
  }
}

@Controller()
class UndeclaredController {
  @RheoConsumer({ stream: 'nowhere', group: 'risk' })
  onTick(@Payload() tick: JsonValue) {
    void tick;
  }
}

@Controller()
class PartitionController {
  @RheoConsumer({ stream: 'market-events', group: 'risk', partitions: [0, 5] })
  onTick(@Payload() tick: JsonValue) {
    void tick;
  }
}

@Controller()
class FirstController {
  @RheoConsumer({ stream: 'market-events', group: 'risk' })
  a(@Payload() tick: JsonValue) {
    void tick;
  }
}

@Controller()
class SecondController {
  @RheoConsumer({ stream: 'market-events', group: 'risk' })
  b(@Payload() tick: JsonValue) {
    void tick;
  }
}

@Controller()
class GoodController {
  @RheoConsumer({ stream: 'market-events', group: 'surveillance' })
  onTick(@Payload() tick: JsonValue) {
    void tick;
  }
}

async function listenWith(backend: Backend, controllers: unknown[]): Promise<{ error: unknown; app: INestMicroservice }> {
  const app = await createMicroservice({
    imports: [RheoModule.forRoot({ backend, streams: [{ name: 'market-events', partitions: 2 }] })],
    controllers: controllers as never[],
  });
  let error: unknown;
  try {
    await app.listen();
  } catch (err) {
    error = err;
  }
  return { error, app };
}

describe('RheoServer.listen', () => {
  it.each([
    ['a bad option value', [RiskController], /^RiskController\.onCurve: maxDemand must be between 1 and \d+$/, 'maxDemand'],
    ['pollMs not below leaseMs', [PollController], /^PollController\.onTick: pollMs must be less than leaseMs \(1000\)$/, 'pollMs'],
    ['an unknown option', [TypoController], /^TypoController\.onTick: options\.maxDemnd is not a consumer option/, 'options.maxDemnd'],
    [
      'a partition the stream does not have',
      [PartitionController],
      /^PartitionController\.onTick: partitions: stream "market-events" has 2 partition\(s\), no partition 5$/,
      'partitions',
    ],
    [
      'two handlers on one (stream, group)',
      [FirstController, SecondController],
      /^(First|Second)Controller\.[ab]: (First|Second)Controller\.[ab] already consumes market-events\/risk/,
      'group',
    ],
  ])('fails with an error naming the handler on %s, and creates no group', async (_what, controllers, message, field) => {
    const backend = memoryBackend();
    const { error, app } = await listenWith(backend, [GoodController, ...controllers]);
    expect(error).toBeInstanceOf(RheoError);
    expect((error as RheoError).code).toBe('invalid_argument');
    expect((error as RheoError).message).toMatch(message);
    expect((error as RheoError).field).toBe(field);
    const rheo = new Rheo(backend);
    expect(await rheo.listGroups('market-events').catch(() => [])).toEqual([]);
    await app.close();
  });

  it('fails naming the handler when its stream is neither declared nor existing', async () => {
    const { error, app } = await listenWith(memoryBackend(), [UndeclaredController]);
    expect(error).toMatchObject({ code: 'stream_not_found' });
    expect((error as Error).message).toMatch(
      /^UndeclaredController\.onTick: stream "nowhere" does not exist; declare it in RheoModule\.forRoot/,
    );
    await app.close();
  });

  it('calls back with backend_unavailable when the backend is unreachable', async () => {
    const backend = memoryBackend();
    await backend.close();
    const app = await createMicroservice({ imports: [RheoModule.forRoot({ backend })], controllers: [GoodController] });
    const statuses: string[] = [];
    app.get(RheoServer).status.subscribe((s) => statuses.push(s));
    let error: unknown;
    await new Promise<void>((resolve) => {
      app.get(RheoServer).listen((err?: unknown) => {
        error = err;
        resolve();
      });
    });
    expect(error).toBeInstanceOf(RheoError);
    expect(error).toMatchObject({ code: 'backend_unavailable' });
    expect((error as Error).message).toMatch(/^RheoServer\(default\): the memory backend is unreachable/);
    expect(statuses).toEqual(['disconnected']);
    await expect(app.listen()).rejects.toMatchObject({ code: 'backend_unavailable' });
    await app.close();
  });

  it('creates declared streams and the groups consumers name, reports connected, and closes idempotently', async () => {
    const backend = memoryBackend();
    const app = await createMicroservice({
      imports: [RheoModule.forRoot({ backend, streams: [{ name: 'market-events', partitions: 2 }] })],
      controllers: [GoodController],
    });
    const server = app.get(RheoServer);
    const statuses: string[] = [];
    server.status.subscribe((s) => statuses.push(s));
    await app.listen();
    const rheo = app.get(Rheo);
    expect(await rheo.listStreams()).toEqual([expect.objectContaining({ name: 'market-events', partitions: 2 })]);
    expect((await rheo.listGroups('market-events')).map((g) => g.group)).toEqual(['surveillance']);
    expect(server.consumers()).toEqual([
      expect.objectContaining({ stream: 'market-events', group: 'surveillance', handlerName: 'GoodController.onTick', state: 'running' }),
    ]);
    expect(statuses).toEqual(['connected']);
    await Promise.all([server.close(), server.close()]);
    expect(server.consumers()[0].state).toBe('stopped');
    await app.close();
    expect(statuses).toEqual(['connected', 'disconnected']);
    // The module closed the backend after the transport drained.
    await expect(backend.ping()).rejects.toMatchObject({ code: 'backend_unavailable' });
  });

  it('rejects bad module options with an error naming the instance and the field', async () => {
    await expect(createMicroservice({ imports: [RheoModule.forRoot({ backend: {} as Backend })] })).rejects.toThrow(
      /^RheoModule\(default\): backend must be a Backend/,
    );
    await expect(
      createMicroservice({ imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: '', partitions: 1 }] })] }),
    ).rejects.toThrow(/^RheoModule\(default\): streams\[0\]\.name must not be empty$/);
    await expect(
      createMicroservice({ imports: [RheoModule.forRoot({ backend: memoryBackend(), defaults: { concurency: 2 } as never })] }),
    ).rejects.toThrow(/^RheoModule\(default\): defaults\.concurency is not a consumer option/);
    expect(() => RheoModule.forRootAsync({ useFactory: undefined as never })).toThrow(/useFactory must be a function/);
  });

  it('fails the boot on consumers Nest would never run: on a provider, or naming an unknown instance', async () => {
    const boot = startHybrid({
      imports: [RheoModule.forRoot({ backend: memoryBackend(), streams: [{ name: 'market-events' }] })],
      controllers: [GoodController, UnknownInstanceController],
      providers: [MisplacedService],
    });
    await expect(boot).rejects.toMatchObject({ code: 'invalid_argument' });
    const message = (await boot.then(
      () => '',
      (err: Error) => err.message,
    )) as string;
    expect(message.split('\n').sort()).toEqual([
      "MisplacedService.onTick: @RheoConsumer is on a provider; Nest runs transport handlers on controllers only (add the class to a module's controllers)",
      'UnknownInstanceController.onTick: @RheoConsumer names instance "audti" but no RheoModule registers it (registered: default)',
    ]);
  });
});
