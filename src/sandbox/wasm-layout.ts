/**
 * Where a QuickJS build keeps its state in linear memory, read from the `.wasm` bytes: the end of its initialized
 * data and the top of its C stack, which Emscripten's default layout places right below the heap
 * (`[data][bss][stack][heap]`). Memory images (memory-image.ts) copy the data and the heap and leave the stack out:
 * between two calls into the module nothing lives on it.
 */
export interface WasmLayout {
  /** One past the last byte of the module's initialized data segments. */
  dataEnd: number;
  /** The initial stack pointer: the top of the stack, where the heap starts. */
  stackTop: number;
}

const layouts = new WeakMap<WebAssembly.Module, WasmLayout>();

/** The layout of a compiled module whose bytes were seen (`noteLayout`), else undefined. */
export function layoutOf(module: WebAssembly.Module): WasmLayout | undefined {
  return layouts.get(module);
}

/** Records the layout read from a module's bytes; bytes it cannot read (another toolchain's layout) record nothing. */
export function noteLayout(module: WebAssembly.Module, bytes: Uint8Array): void {
  try {
    const layout = readLayout(bytes);
    if (layout) layouts.set(module, layout);
  } catch {
    // Not the layout this reader knows: no memory images for this module.
  }
}

/**
 * Records a layout read elsewhere: a server run thread gets the compiled module and the layout its pool read from
 * the bytes, instead of the bytes. Anything but two integers with the stack above the data records nothing.
 */
export function setLayout(module: WebAssembly.Module, layout: WasmLayout): void {
  const { dataEnd, stackTop } = layout ?? {};
  if (Number.isSafeInteger(dataEnd) && Number.isSafeInteger(stackTop) && dataEnd > 0 && stackTop > dataEnd) layouts.set(module, { dataEnd, stackTop });
}

/**
 * Reads the first global (Emscripten's stack pointer: a mutable i32 set by `i32.const`) and the active data
 * segments' extent. Undefined unless both are as expected and the stack lies above the data.
 */
export function readLayout(bytes: Uint8Array): WasmLayout | undefined {
  if (bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) return undefined;
  let p = 8;
  // LEB128, at most 5 bytes (32 bits): a longer run of continuation bytes ends the number, and reading past the end
  // gives 0, so malformed bytes end the scan instead of looping.
  const leb = (signed: boolean) => {
    let result = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = bytes[p++] ?? 0;
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80 && shift < 35);
    return signed && byte & 0x40 ? result - 2 ** shift : result;
  };
  const u32 = () => leb(false);
  const i32 = () => leb(true);
  let stackTop: number | undefined;
  let dataEnd = 0;
  while (p < bytes.length) {
    const id = bytes[p++]!;
    const size = u32();
    const end = p + size;
    if (end > bytes.length) return undefined; // truncated
    if (id === 6 && u32() > 0) {
      // global 0: valtype i32 (0x7f), mutable (1), init `i32.const n; end`.
      if (bytes[p] === 0x7f && bytes[p + 1] === 1 && bytes[p + 2] === 0x41) {
        p += 3;
        stackTop = i32();
        if (bytes[p] !== 0x0b) return undefined;
      } else return undefined;
    }
    if (id === 11) {
      const count = u32();
      for (let i = 0; i < count; i++) {
        const flags = u32();
        if (flags === 1) {
          p += u32(); // passive: not placed at load
          continue;
        }
        if (flags === 2) u32(); // memory index
        if (flags !== 0 && flags !== 2) return undefined;
        if (bytes[p++] !== 0x41) return undefined;
        const offset = i32();
        if (bytes[p++] !== 0x0b) return undefined;
        const length = u32();
        dataEnd = Math.max(dataEnd, offset + length);
        p += length;
      }
    }
    p = end;
  }
  if (stackTop === undefined || dataEnd === 0 || stackTop <= dataEnd) return undefined;
  return { dataEnd, stackTop };
}
