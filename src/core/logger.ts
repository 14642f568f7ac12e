export interface Logger {
  debug(message: string, ...rest: unknown[]): void;
  info(message: string, ...rest: unknown[]): void;
  warn(message: string, ...rest: unknown[]): void;
  error(message: string, ...rest: unknown[]): void;
}

const PREFIX = '[in-app-runtime]';

export const consoleLogger: Logger = {
  debug: (m, ...r) => console.debug(PREFIX, m, ...r),
  info: (m, ...r) => console.info(PREFIX, m, ...r),
  warn: (m, ...r) => console.warn(PREFIX, m, ...r),
  error: (m, ...r) => console.error(PREFIX, m, ...r),
};

/** Wraps a logger so that a message given to `once` is only said the first time. */
export function withOnce(logger: Logger): Logger & { once(key: string, message: string): void } {
  const said = new Set<string>();
  return Object.assign(Object.create(logger) as Logger, logger, {
    once(key: string, message: string) {
      if (said.has(key)) return;
      said.add(key);
      logger.info(message);
    },
  });
}
