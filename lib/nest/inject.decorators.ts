import { Inject } from '@nestjs/common';
import { getRheoClientToken, getRheoHealthIndicatorToken, getRheoServerToken, getRheoToken } from './constants';

/** Inject the core `Rheo` facade of instance `name` (default instance when omitted). */
export function InjectRheo(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getRheoToken(name));
}

/** Inject the {@link RheoClient} of instance `name` (default instance when omitted). */
export function InjectRheoClient(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getRheoClientToken(name));
}

/** Inject the {@link RheoServer} of instance `name` (default instance when omitted). */
export function InjectRheoServer(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getRheoServerToken(name));
}

/** Inject the {@link RheoHealthIndicator} of instance `name` (default instance when omitted). */
export function InjectRheoHealthIndicator(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getRheoHealthIndicatorToken(name));
}
