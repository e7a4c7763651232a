//! The seccomp filter every sandboxed command runs under (bwrap's `--seccomp`): no Unix socket
//! can be made, so none on the filesystem is reachable through the read-only root (a Docker
//! daemon's, a session bus, PostgreSQL's peer-authenticated socket); `socketpair` and sockets of
//! the command's own network namespace stay. io_uring is refused too, since its socket and
//! connect operations bypass the filter. A syscall of another architecture's ABI kills the
//! process: the numbers below would not mean what they say there.

/// `struct sock_filter`: one classic BPF instruction.
#[derive(Clone, Copy)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const LD_ABS_W: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// Offsets into `struct seccomp_data`: the syscall number, the audit architecture, and the low
/// 32 bits of the first argument (little-endian on both architectures below).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0: u32 = 16;

const AF_UNIX: u32 = 1;

#[cfg(target_arch = "x86_64")]
mod abi {
    pub const AUDIT_ARCH: u32 = 0xc000_003e;
    pub const SOCKET: u32 = 41;
    /// x32 syscalls carry this bit; they are not the numbers below.
    pub const FOREIGN_FROM: u32 = 0x4000_0000;
}

#[cfg(target_arch = "aarch64")]
mod abi {
    pub const AUDIT_ARCH: u32 = 0xc000_00b7;
    pub const SOCKET: u32 = 198;
    pub const FOREIGN_FROM: u32 = u32::MAX;
}

/// io_uring_setup, io_uring_enter and io_uring_register (the same on every architecture).
const IO_URING: [u32; 3] = [425, 426, 427];

fn stmt(code: u16, k: u32) -> Insn {
    Insn {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn { code, jt, jf, k }
}

/// The program as instructions. Jumps go forward only; the four returns sit at the end.
fn program() -> Vec<Insn> {
    let errno = |e: i32| RET_ERRNO | (e as u32 & 0xffff);
    // Indexes: 0-9 the checks, then ALLOW (10), EACCES (11), ENOSYS (12), KILL (13).
    let (allow, eacces, enosys, kill) = (10u8, 11u8, 12u8, 13u8);
    let to = |from: u8, target: u8| target - from - 1;
    let mut p = vec![
        stmt(LD_ABS_W, ARCH),
        jump(JEQ_K, abi::AUDIT_ARCH, 0, to(1, kill)),
        stmt(LD_ABS_W, NR),
        jump(JGE_K, abi::FOREIGN_FROM, to(3, kill), 0),
        jump(JEQ_K, abi::SOCKET, 0, to(4, 7)),
        stmt(LD_ABS_W, ARG0),
        jump(JEQ_K, AF_UNIX, to(6, eacces), to(6, allow)),
    ];
    for (i, nr) in IO_URING.iter().enumerate() {
        let at = 7 + i as u8;
        p.push(jump(JEQ_K, *nr, to(at, enosys), 0));
    }
    p.extend([
        stmt(RET_K, RET_ALLOW),
        stmt(RET_K, errno(libc::EACCES)),
        stmt(RET_K, errno(libc::ENOSYS)),
        stmt(RET_K, RET_KILL_PROCESS),
    ]);
    p
}

/// The compiled filter, as bwrap reads it from a file descriptor.
pub fn filter_bytes() -> Vec<u8> {
    program()
        .iter()
        .flat_map(|i| {
            let mut b = Vec::with_capacity(8);
            b.extend(i.code.to_ne_bytes());
            b.push(i.jt);
            b.push(i.jf);
            b.extend(i.k.to_ne_bytes());
            b
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program the way the kernel does, on one syscall.
    fn verdict(arch: u32, nr: u32, arg0: u32) -> u32 {
        let p = program();
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = p[pc];
            match i.code {
                LD_ABS_W => {
                    acc = match i.k {
                        NR => nr,
                        ARCH => arch,
                        ARG0 => arg0,
                        other => panic!("load of offset {other}"),
                    };
                    pc += 1;
                }
                JEQ_K | JGE_K => {
                    let hit = if i.code == JEQ_K {
                        acc == i.k
                    } else {
                        acc >= i.k
                    };
                    pc += 1 + usize::from(if hit { i.jt } else { i.jf });
                }
                RET_K => return i.k,
                other => panic!("opcode {other:#x}"),
            }
        }
    }

    #[test]
    fn unix_sockets_and_io_uring_are_refused_and_the_rest_allowed() {
        let a = abi::AUDIT_ARCH;
        assert_eq!(
            verdict(a, abi::SOCKET, AF_UNIX),
            RET_ERRNO | libc::EACCES as u32
        );
        assert_eq!(verdict(a, abi::SOCKET, 2), RET_ALLOW, "AF_INET");
        assert_eq!(verdict(a, abi::SOCKET, 16), RET_ALLOW, "AF_NETLINK");
        for nr in IO_URING {
            assert_eq!(verdict(a, nr, 0), RET_ERRNO | libc::ENOSYS as u32);
        }
        assert_eq!(verdict(a, 0, 0), RET_ALLOW, "read");
        assert_eq!(verdict(0x4000_0003, 0, 0), RET_KILL_PROCESS, "i386");
        assert_eq!(filter_bytes().len(), program().len() * 8);
    }
}
