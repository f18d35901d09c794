// `npx ts-node --transpile-only sample/main.ts`: the sample as a service.
import 'reflect-metadata';
import { createApp, startApp } from './bootstrap';

async function main(): Promise<void> {
  const app = await createApp();
  await startApp(app, Number(process.env.PORT ?? 3000));
}

void main();
