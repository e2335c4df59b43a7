//! Any text in, no panic: every prefix of the samples (a paste cut at any byte) and arbitrary
//! strings read without panicking, and every diagnostic span lies on character boundaries of
//! the text.

use proptest::prelude::*;
use rulelint_ipvs::parse;

const SAMPLE: &str = "[root@n ~]# ipvsadm -Ln
IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.1:443 rr persistent 10800 mask 255.255.255.0
  -> 172.16.1.3:6443              Masq    1      0          0         \r
SCTP [fd00::1]:9000 sh (flag-1)
  -> [fd00::5]:9000               Route   0      0          0
FWM  7 IPv6 wrr
TCP  ip-10-0-62-121.ec2.internal: rr
  -> 100.98.125.10:http           Masq    1      2          14
-A -t 10.96.0.1:443 -s rr -p 10800
-a -t 10.96.0.1:443 -r 192.168.0.1:6443 -m -w 1
create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x57c6d218
add KUBE-CLUSTER-IP 10.96.0.10,tcp:53
add KUBE-LOOP-BACK 10.244.1.5,tcp:53,10.244.1.5
Name: KUBE-NODE-PORT-TCP
Type: bitmap:port
Revision: 3
Header: range 0-65535
References: 0
Number of entries: 2
Members:
30080
x,y,z

5: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default
    link/ether 9a:8e:57:1b:2b:5c brd ff:ff:ff:ff:ff:ff
    inet 10.96.0.1/32 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
6: cni0    inet 10.244.1.1/24 brd 10.244.1.255 scope global cni0\\       valid_lft forever
prose é ✓
";

fn check_spans(text: &str) {
    let parsed = parse(text);
    for d in &parsed.diagnostics {
        let r = d.span.range();
        assert!(
            r.end <= text.len() && text.is_char_boundary(r.start) && text.is_char_boundary(r.end)
        );
    }
}

#[test]
fn cut_at_every_byte_never_panics() {
    for end in 0..=SAMPLE.len() {
        if SAMPLE.is_char_boundary(end) {
            check_spans(&SAMPLE[..end]);
            check_spans(&SAMPLE[end..]);
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        check_spans(&text);
    }

    #[test]
    fn shuffled_sample_lines_never_panic(lines in proptest::collection::vec(proptest::sample::select(SAMPLE.lines().collect::<Vec<_>>()), 0..60)) {
        check_spans(&lines.join("\n"));
    }
}
