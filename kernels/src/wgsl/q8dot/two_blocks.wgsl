// The input of a unit of 64 elements of a K-quant block (Q4_K, Q5_K, Q6_K): two 32-element
// input blocks, which the type's unit_input names.

const UNIT_COLS: u32 = 64u;

struct UnitX {
    a: XBlock,
    b: XBlock,
}
