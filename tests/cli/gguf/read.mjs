// tests/cli/gguf/read.mjs — an independent reader's view of GGUF files (the npm package @huggingface/gguf), printed
// in `fusecheck gguf`'s form: version, where the data section begins, each key with its type and value (floats as their bits), each tensor's name,
// shape, type and offset. Run from a folder where the package is installed: node read.mjs FILE...
import { gguf } from "@huggingface/gguf";

const types = ["u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"];

// A value as fusecheck prints it.
function show(v, type, sub) {
  if (type === 8) return `"${v}"`;
  if (type === 9) return `${sub === undefined ? "?" : types[sub]}[${v.length}]`;
  if (type === 6) { const b = Buffer.alloc(4); b.writeFloatLE(v); return "0x" + b.readUInt32LE().toString(16); }
  if (type === 12) { const b = Buffer.alloc(8); b.writeDoubleLE(v); return "0x" + b.readBigUInt64LE().toString(16); }
  if (type === 7) return v ? "1" : "0";
  return String(v);
}

for (const file of process.argv.slice(2)) {
  const { typedMetadata, tensorInfos, tensorDataOffset } = await gguf(file, { allowLocalFile: true, typedMetadata: true });
  const out = [`version ${typedMetadata.version.value}`, `data ${tensorDataOffset}`];
  for (const [key, kv] of Object.entries(typedMetadata)) {
    if (key === "version" || key === "tensor_count" || key === "kv_count") continue;
    out.push(`kv ${key} ${types[kv.type]} ${show(kv.value, kv.type, kv.subType)}`);
  }
  for (const t of tensorInfos)
    out.push(`tensor ${t.name} ${t.shape.map(String).join(",")} ${t.dtype} ${t.offset}`);
  console.log(out.join("\n"));
}
