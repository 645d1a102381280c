import type { Config } from "../config.ts";
import { SecretBox } from "./secretBox.ts";

export { SecretBox, SecretKeyMissing, type SealedSecret } from "./secretBox.ts";

const boxes = new WeakMap<Config, SecretBox>();

/** The process's secret box for a config (its keys parsed once). */
export function secretBoxOf(config: Config): SecretBox {
  let box = boxes.get(config);
  if (!box) boxes.set(config, (box = new SecretBox(config.secretKey, config.previousSecretKeys)));
  return box;
}
