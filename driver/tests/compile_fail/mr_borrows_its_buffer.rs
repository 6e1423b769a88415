// A buffer registered with `Pd::reg_mr` is mutably borrowed while the Mr lives: it cannot
// be read, written or dropped behind the device's back.
use ferrodat_driver::{Access, Pd};

fn read_while_registered(pd: &Pd) {
    let mut buf = vec![0u8; 64];
    let mr = pd.reg_mr(&mut buf, Access::LOCAL_WRITE).unwrap();
    let _first = buf[0];
    drop(mr);
}

fn write_while_registered(pd: &Pd) {
    let mut buf = vec![0u8; 64];
    let mr = pd.reg_mr(&mut buf, Access::LOCAL_WRITE).unwrap();
    buf[0] = 1;
    drop(mr);
}

fn drop_while_registered(pd: &Pd) {
    let mut buf = vec![0u8; 64];
    let mr = pd.reg_mr(&mut buf, Access::LOCAL_WRITE).unwrap();
    drop(buf);
    drop(mr);
}

fn main() {}
