// The input of a unit that is one 32-element block (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): block u.

const UNIT_COLS: u32 = 32u;

struct UnitX {
    a: XBlock,
}

fn unit_input(u: u32, xb: u32) -> UnitX {
    return UnitX(x_block(xb, u));
}
