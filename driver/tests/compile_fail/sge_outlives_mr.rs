// An Sge borrows the Mr it came from: it cannot outlive the registration.
use ferrodat_driver::work_request::Sge;
use ferrodat_driver::{Access, Pd};

fn sge_of_dropped_mr(pd: &Pd) -> Sge<'static> {
    let mr = pd.alloc_mr(64, Access::LOCAL_WRITE).unwrap();
    let sge = mr.sge(0, 8).unwrap();
    drop(mr);
    sge
}

fn main() {}
