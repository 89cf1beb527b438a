/**
 * A TypeScript consumer of `@nuwa/player/shaka` with the real shaka-player
 * typings, type-checked in the packed-install project (e2e/pack.e2e.test.ts)
 * with bundler resolution, as a browser app that bundles shaka is built: the
 * real `shaka` namespace and `shaka.Player` must be accepted without casts. The
 * @ts-expect-error line fails the check if the declarations degrade to `any`.
 * (Not in the repository's tsc: under its NodeNext resolution shaka's typings
 * read as CommonJS.)
 */
import { attachNuwaShaka, type ShakaAttachment } from "@nuwa/player/shaka";
import shaka from "shaka-player";

/** shaka over Nuwa, as in the package README. */
export async function play(video: HTMLVideoElement): Promise<ShakaAttachment> {
  const player = new shaka.Player();
  await player.attach(video);
  const nuwa = attachNuwaShaka(player, shaka, { url: "https://127.0.0.1:4433/nuwa", estimate: "nuwa" });
  await player.load("https://127.0.0.1:4433/manifest.mpd");
  const both: number = nuwa.estimateBps() - nuwa.shakaEstimateBps();
  console.log(both);
  // @ts-expect-error: estimate is "nuwa" or "shaka"
  attachNuwaShaka(player, shaka, { url: "https://127.0.0.1:4433/nuwa", estimate: "dashjs" });
  return nuwa;
}
