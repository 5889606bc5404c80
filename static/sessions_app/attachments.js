// @ts-check
// Pictures attached in the composer: which files are taken, and Pi's image block for each.
// Pure: the composer and the unit tests share it. The server checks every picture again.

export const PICTURE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

function size(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KiB`;
  return `${bytes} bytes`;
}

// Why `file` ({name, type, size}) cannot be attached next to `attached` pictures, or null when it can.
export function pictureProblem(file, { attached = 0, maxBytes, maxCount }) {
  const name = file.name || "the picture";
  if (!PICTURE_TYPES.includes(file.type)) return `${name} is not a PNG, JPEG, GIF or WebP picture.`;
  if (file.size > maxBytes) return `${name} is ${size(file.size)}; a picture may be at most ${size(maxBytes)}.`;
  if (attached >= maxCount) return `At most ${maxCount} picture${maxCount === 1 ? "" : "s"} go with one message.`;
  return null;
}

// Pi's image content block from a `data:` URL (what FileReader.readAsDataURL gives).
export function imageBlock(dataUrl) {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(String(dataUrl));
  if (!match) return null;
  return { type: "image", data: match[2], mimeType: match[1] };
}
