import {
  BadRequestException,
  ForbiddenException,
  HttpException,
  InternalServerErrorException,
  UnprocessableEntityException,
} from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';
import { RheoReject, RheoRetry } from '../../lib';
import { outcomeOfNestError } from '../../lib/nest/nest-error-outcome';
import { outcomeOfPipelineFailure } from '../../lib/nest/nest-error-outcome';

describe('outcomeOfNestError', () => {
  it.each([
    ['a 400 from a pipe', new BadRequestException('Validation failed'), { kind: 'reject', reason: 'Validation failed' }],
    ['a 422', new UnprocessableEntityException('bad shape'), { kind: 'reject', reason: 'bad shape' }],
    ['a 403', new ForbiddenException('nope'), { kind: 'reject', reason: 'nope' }],
    ['a 408 (retryable)', new HttpException('slow', 408), { kind: 'nack', reason: 'slow' }],
    ['a 429 (retryable)', new HttpException('later', 429), { kind: 'nack', reason: 'later' }],
    ['a 500', new InternalServerErrorException('db down'), { kind: 'nack', reason: 'db down' }],
    ['an RpcException', new RpcException('remote failed'), { kind: 'nack', reason: 'remote failed' }],
    ['a RheoReject', new RheoReject('bad curve'), { kind: 'reject', reason: 'bad curve' }],
    ['a RheoRetry with delay', new RheoRetry('wait', { delayMs: 250 }), { kind: 'nack', reason: 'wait', delayMs: 250 }],
    ['a plain Error', new Error('boom'), { kind: 'nack', reason: 'boom' }],
  ])('maps %s', (_what, err, outcome) => {
    expect(outcomeOfNestError(err)).toEqual(outcome);
  });
});

describe('outcomeOfPipelineFailure', () => {
  const serialised = (message: string) => ({ status: 'error', message });

  it('prefers an Error a filter rethrew over what the interceptor recorded', () => {
    expect(outcomeOfPipelineFailure(new RheoReject('from filter'), { reached: true, error: { value: new Error('original') } })).toEqual({
      kind: 'reject',
      reason: 'from filter',
    });
  });

  it("uses the recorded original when Nest's default filter serialised the error", () => {
    expect(
      outcomeOfPipelineFailure(serialised('Internal server error'), {
        reached: true,
        error: { value: new BadRequestException('x must be a number') },
      }),
    ).toEqual({
      kind: 'reject',
      reason: 'x must be a number',
    });
  });

  it('dead-letters a guard denial (failed before the handler interceptor ran)', () => {
    expect(outcomeOfPipelineFailure(serialised('Forbidden resource'), { reached: false })).toEqual({
      kind: 'reject',
      reason: 'guard denied: Forbidden resource',
    });
  });

  it('retries any other failure before the handler, e.g. a guard that threw', () => {
    expect(outcomeOfPipelineFailure(serialised('Internal server error'), { reached: false })).toEqual({
      kind: 'nack',
      reason: 'Internal server error',
    });
    expect(outcomeOfPipelineFailure('odd', { reached: false })).toEqual({ kind: 'nack', reason: 'odd' });
  });
});
