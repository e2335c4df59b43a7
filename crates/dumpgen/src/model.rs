//! The synthetic cluster behind a dump: Services, their ports and the pods
//! backing them.
//!
//! Everything here is *prefix-stable*: Service `k` is drawn from its own
//! random stream (seeded from the cluster seed and `k`), and the only state
//! carried from one Service to the next is the NodePort and load-balancer IP
//! allocators, which hand out values in order. So a cluster of `N` Services
//! is the first `N` Services of any larger cluster with the same seed, and
//! its rule count can be summed Service by Service.

use crate::text;
use crate::{Layout, Shape};

/// SplitMix64: a tiny, fast, well-mixed generator; good enough to pick
/// addresses and sizes, and fully determined by its seed.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` must fit in 32 bits).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Mixes two words into one seed.
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    SplitMix::new(a ^ b.wrapping_mul(0xD6E8_FEB8_6659_FD93)).next_u64()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proto {
    Tcp,
    Udp,
}

impl Proto {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    ClusterIp,
    NodePort,
    LoadBalancer,
}

/// One port of a Service.
#[derive(Clone, Debug)]
pub(crate) struct PortSpec {
    /// `ns/name:port`, or `ns/name` for an unnamed port (Go's
    /// `ServicePortName.String()`).
    pub(crate) name: String,
    pub(crate) proto: Proto,
    pub(crate) port: u16,
    pub(crate) target: u16,
    /// 0 when the Service has no node ports.
    pub(crate) node_port: u16,
}

/// One backing pod (or host-network address) of a Service.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pod {
    pub(crate) addr: u128,
    /// Whether the pod runs on the node the dump is taken from.
    pub(crate) local: bool,
}

/// A Service with all its ports.
#[derive(Clone, Debug)]
pub(crate) struct ServiceSpec {
    pub(crate) cluster_ip: u128,
    pub(crate) kind: Kind,
    /// `externalTrafficPolicy: Local`.
    pub(crate) local: bool,
    /// `sessionAffinity: ClientIP`.
    pub(crate) affinity: bool,
    /// The load-balancer ingress IP, for `kind == LoadBalancer`.
    pub(crate) lb_ip: u128,
    /// `loadBalancerSourceRanges`: index into [`source_ranges`], 0 for none.
    pub(crate) ranges: usize,
    /// `healthCheckNodePort`, 0 for none.
    pub(crate) hc_node_port: u16,
    pub(crate) ports: Vec<PortSpec>,
    /// Sorted as kube-proxy sorts endpoints: by their `ip:port` string.
    pub(crate) pods: Vec<Pod>,
}

impl ServiceSpec {
    pub(crate) fn local_pods(&self) -> usize {
        self.pods.iter().filter(|p| p.local).count()
    }
}

/// Address plan of the synthetic cluster.
pub(crate) struct Net {
    pub(crate) v6: bool,
}

impl Net {
    /// The `--cluster-cidr` kube-proxy uses to tell pod traffic apart.
    pub(crate) fn cluster_cidr(&self) -> &'static str {
        if self.v6 {
            "fd00:10:244::/56"
        } else {
            "10.244.0.0/16"
        }
    }

    pub(crate) fn loopback(&self) -> &'static str {
        if self.v6 { "::1/128" } else { "127.0.0.0/8" }
    }

    /// Service IP number `offset` of 10.96.0.0/12 or fd00:10:96::/108.
    pub(crate) fn service_ip(&self, offset: u32) -> u128 {
        if self.v6 {
            0xfd00_0010_0096_0000_0000_0000_0000_0000 + u128::from(offset)
        } else {
            u128::from(0x0a60_0000u32 + offset)
        }
    }

    /// Pod `host` on node `node`: 10.244.<node>.<host+2> or
    /// fd00:10:244:<node>::<host+2>.
    pub(crate) fn pod_ip(&self, node: u32, host: u32) -> u128 {
        if self.v6 {
            0xfd00_0010_0244_0000_0000_0000_0000_0000
                | (u128::from(node) << 64)
                | u128::from(host + 2)
        } else {
            u128::from(0x0af4_0000u32 | (node << 8) | (host + 2))
        }
    }

    /// Node number `node`: 192.168.0.10 onwards, or fd00:192:168::a onwards.
    pub(crate) fn node_ip(&self, node: u32) -> u128 {
        if self.v6 {
            0xfd00_0192_0168_0000_0000_0000_0000_0000 + u128::from(10 + node)
        } else {
            u128::from(0xc0a8_0000u32 + 10 + node)
        }
    }

    /// Load-balancer ingress IP number `n`: 198.18.0.1 onwards (the
    /// benchmarking range), or 2001:db8:4c42::1 onwards.
    pub(crate) fn lb_ip(&self, n: u32) -> u128 {
        if self.v6 {
            0x2001_0db8_4c42_0000_0000_0000_0000_0000 + u128::from(n + 1)
        } else {
            u128::from(0xc612_0000u32 + n + 1)
        }
    }
}

/// `loadBalancerSourceRanges` sets; the second contains the node addresses,
/// which makes kube-proxy add the "allow from node" rule.
pub(crate) fn source_ranges(v6: bool, index: usize) -> &'static [&'static str] {
    const V4: [&[&str]; 4] = [
        &[],
        &["203.0.113.0/24"],
        &["10.0.0.0/8", "192.168.0.0/16"],
        &["198.51.100.0/24", "203.0.113.128/25"],
    ];
    const V6: [&[&str]; 4] = [
        &[],
        &["2001:db8:1::/48"],
        &["2001:db8:2::/48", "fd00::/8"],
        &["2001:db8:3::/48", "2001:db8:4::/48"],
    ];
    if v6 { V6[index] } else { V4[index] }
}

/// Whether range set `index` contains the node's own address.
pub(crate) fn ranges_allow_node(index: usize) -> bool {
    index == 2
}

const NAMESPACES: [&str; 24] = [
    "default",
    "payments",
    "checkout",
    "catalog",
    "search",
    "identity",
    "monitoring",
    "logging",
    "ingress-nginx",
    "cert-manager",
    "data",
    "analytics",
    "platform",
    "messaging",
    "media",
    "billing",
    "shipping",
    "inventory",
    "notifications",
    "team-alpha",
    "team-bravo",
    "team-charlie",
    "staging",
    "batch",
];

const APPS: [&str; 48] = [
    "orders",
    "cart",
    "ledger",
    "invoice",
    "profile",
    "session",
    "catalog",
    "pricing",
    "review",
    "rating",
    "stock",
    "warehouse",
    "courier",
    "tracking",
    "email",
    "sms",
    "push",
    "webhook",
    "report",
    "export",
    "import",
    "upload",
    "thumbnail",
    "video",
    "audio",
    "chat",
    "feed",
    "timeline",
    "graph",
    "ranking",
    "recommend",
    "ads",
    "coupon",
    "loyalty",
    "tax",
    "fraud",
    "risk",
    "kyc",
    "audit",
    "config",
    "feature",
    "scheduler",
    "cron",
    "geo",
    "maps",
    "weather",
    "currency",
    "translate",
];

/// A port template: name (empty for an unnamed port), protocol, port and
/// target port.
type PortTemplate = (&'static str, Proto, u16, u16);

/// Roles name the Service (`<app>-<role>`) and pick its ports.
const ROLES: [(&str, &[PortTemplate]); 16] = [
    ("api", &[("http", Proto::Tcp, 80, 8080)]),
    (
        "web",
        &[
            ("http", Proto::Tcp, 80, 8080),
            ("https", Proto::Tcp, 443, 8443),
        ],
    ),
    ("grpc", &[("grpc", Proto::Tcp, 9090, 9090)]),
    ("worker", &[("metrics", Proto::Tcp, 9100, 9100)]),
    ("redis", &[("redis", Proto::Tcp, 6379, 6379)]),
    ("postgres", &[("", Proto::Tcp, 5432, 5432)]),
    ("memcached", &[("memcache", Proto::Tcp, 11211, 11211)]),
    ("exporter", &[("http-metrics", Proto::Tcp, 8080, 8080)]),
    (
        "gateway",
        &[
            ("http", Proto::Tcp, 80, 8080),
            ("https", Proto::Tcp, 443, 8443),
            ("admin", Proto::Tcp, 9901, 9901),
        ],
    ),
    ("mysql", &[("mysql", Proto::Tcp, 3306, 3306)]),
    ("frontend", &[("", Proto::Tcp, 80, 3000)]),
    (
        "backend",
        &[
            ("http", Proto::Tcp, 8080, 8080),
            ("metrics", Proto::Tcp, 9090, 9090),
        ],
    ),
    ("auth", &[("https", Proto::Tcp, 443, 8443)]),
    (
        "search",
        &[
            ("http", Proto::Tcp, 9200, 9200),
            ("transport", Proto::Tcp, 9300, 9300),
        ],
    ),
    ("queue", &[("amqp", Proto::Tcp, 5672, 5672)]),
    (
        "statsd",
        &[
            ("statsd", Proto::Udp, 8125, 8125),
            ("syslog", Proto::Udp, 514, 5514),
        ],
    ),
];

/// Replica-count factors around the mean (they average to 1).
const REPLICA_FACTORS: [f64; 8] = [0.2, 0.4, 0.6, 1.0, 1.0, 1.4, 1.6, 1.8];

/// NodePorts come from the default range 30000-32767 in a scrambled order;
/// past its 2768 ports the range is taken as widened to 65535 (clusters that
/// big set `--service-node-port-range`).
const NODE_PORT_BASE: u32 = 30_000;
const NODE_PORT_DEFAULT_SPAN: u32 = 2_768;
const NODE_PORT_CAPACITY: u32 = NODE_PORT_DEFAULT_SPAN + (65_536 - 32_768);

/// Hands out the cluster's Services in order.
pub(crate) struct Planner<'a> {
    shape: &'a Shape,
    net: Net,
    nodes: u32,
    node: u32,
    next: u64,
    node_ports: u32,
    lbs: u32,
}

impl<'a> Planner<'a> {
    pub(crate) fn new(shape: &'a Shape) -> Self {
        let nodes = shape.nodes.clamp(1, 256);
        Planner {
            shape,
            net: Net { v6: shape.ipv6 },
            nodes,
            node: shape.node % nodes,
            next: 0,
            node_ports: 0,
            lbs: 0,
        }
    }

    pub(crate) fn node_ip(&self) -> u128 {
        self.net.node_ip(self.node)
    }

    fn alloc_node_port(&mut self) -> Option<u16> {
        let j = self.node_ports;
        if j >= NODE_PORT_CAPACITY {
            return None;
        }
        self.node_ports += 1;
        let port = if j < NODE_PORT_DEFAULT_SPAN {
            let off = (self.shape.seed % u64::from(NODE_PORT_DEFAULT_SPAN)) as u32;
            NODE_PORT_BASE + (j * 1201 + off) % NODE_PORT_DEFAULT_SPAN
        } else {
            32_768 + (j - NODE_PORT_DEFAULT_SPAN)
        };
        u16::try_from(port).ok()
    }

    /// The next Service of the cluster.
    pub(crate) fn next_service(&mut self) -> ServiceSpec {
        let k = self.next;
        self.next += 1;
        match k {
            0 => self.kubernetes(),
            1 => self.kube_dns(),
            _ => self.workload(k),
        }
    }

    /// `default/kubernetes`: the API server on the control-plane nodes.
    fn kubernetes(&mut self) -> ServiceSpec {
        let masters = if self.nodes >= 5 { 3 } else { 1 };
        let pods = (0..masters)
            .map(|n| Pod {
                addr: self.net.node_ip(n),
                local: n == self.node,
            })
            .collect();
        let mut svc = ServiceSpec {
            cluster_ip: self.net.service_ip(1),
            kind: Kind::ClusterIp,
            local: false,
            affinity: false,
            lb_ip: 0,
            ranges: 0,
            hc_node_port: 0,
            ports: vec![PortSpec {
                name: "default/kubernetes:https".to_owned(),
                proto: Proto::Tcp,
                port: 443,
                target: 6443,
                node_port: 0,
            }],
            pods,
        };
        sort_pods(&mut svc.pods, self.net.v6);
        svc
    }

    /// `kube-system/kube-dns`: two CoreDNS pods.
    fn kube_dns(&mut self) -> ServiceSpec {
        let mut rng = SplitMix::new(mix(self.shape.seed, 1));
        let pods = (0..2)
            .map(|i| {
                let node = (rng.below(u64::from(self.nodes)) as u32 + i) % self.nodes;
                let host = 1 + i + rng.below(8) as u32;
                Pod {
                    addr: self.net.pod_ip(node, host),
                    local: node == self.node,
                }
            })
            .collect();
        let port = |name: &str, proto, port, target| PortSpec {
            name: format!("kube-system/kube-dns:{name}"),
            proto,
            port,
            target,
            node_port: 0,
        };
        let mut svc = ServiceSpec {
            cluster_ip: self.net.service_ip(10),
            kind: Kind::ClusterIp,
            local: false,
            affinity: false,
            lb_ip: 0,
            ranges: 0,
            hc_node_port: 0,
            ports: vec![
                port("dns", Proto::Udp, 53, 53),
                port("dns-tcp", Proto::Tcp, 53, 53),
                port("metrics", Proto::Tcp, 9153, 9153),
            ],
            pods,
        };
        sort_pods(&mut svc.pods, self.net.v6);
        svc
    }

    /// An application Service.
    fn workload(&mut self, k: u64) -> ServiceSpec {
        let shape = self.shape;
        let mut rng = SplitMix::new(mix(shape.seed, k));
        let j = k - 2;

        // A unique (namespace, name) for every k: a bijection onto the
        // namespace x app x role grid, then a numeric suffix per lap.
        let grid = (NAMESPACES.len() * APPS.len() * ROLES.len()) as u64;
        let cell = ((j % grid) * 7919 + shape.seed % grid) % grid;
        let lap = j / grid;
        let ns = NAMESPACES[(cell % NAMESPACES.len() as u64) as usize];
        let rest = cell / NAMESPACES.len() as u64;
        let app = APPS[(rest % APPS.len() as u64) as usize];
        let (role, template) = ROLES[(rest / APPS.len() as u64) as usize];
        let name = if lap == 0 {
            format!("{ns}/{app}-{role}")
        } else {
            format!("{ns}/{app}-{role}-{}", lap + 1)
        };

        // Cluster IP: an odd multiplier is a bijection modulo 2^19; offsets
        // start at 256 to stay clear of .1 (kubernetes) and .10 (kube-dns).
        let offset = 256 + ((j.wrapping_mul(0x9E37_79B1) + (shape.seed >> 7)) & 0x7_FFFF) as u32;
        let cluster_ip = self.net.service_ip(offset);

        let r = rng.unit();
        let mut kind = if r < shape.loadbalancer_share {
            Kind::LoadBalancer
        } else if r < shape.loadbalancer_share + shape.nodeport_share {
            Kind::NodePort
        } else {
            Kind::ClusterIp
        };
        let local_draw = rng.unit();
        let affinity = rng.unit() < shape.affinity_share;
        let empty = rng.unit() < shape.empty_share;
        let ranges_draw = rng.unit();
        let factor = REPLICA_FACTORS[rng.below(REPLICA_FACTORS.len() as u64) as usize];
        let start = rng.below(u64::from(self.nodes) * 253) as u32;

        // Node ports, one per Service port (and one for health checks).
        let mut node_ports = Vec::with_capacity(template.len());
        if kind != Kind::ClusterIp {
            for _ in template {
                match self.alloc_node_port() {
                    Some(p) => node_ports.push(p),
                    None => {
                        kind = Kind::ClusterIp;
                        node_ports.clear();
                        break;
                    }
                }
            }
        }
        let local = kind != Kind::ClusterIp && local_draw < shape.local_policy_share;
        let mut hc_node_port = 0;
        let mut lb_ip = 0;
        let mut ranges = 0;
        if kind == Kind::LoadBalancer {
            lb_ip = self.net.lb_ip(self.lbs);
            self.lbs += 1;
            if local {
                hc_node_port = self.alloc_node_port().unwrap_or(0);
            }
            if ranges_draw < 0.3 {
                ranges = 1 + (ranges_draw * 10.0) as usize % 3;
            }
        }

        let ports = template
            .iter()
            .enumerate()
            .map(|(i, &(pname, proto, port, target))| PortSpec {
                name: if pname.is_empty() {
                    name.clone()
                } else {
                    format!("{name}:{pname}")
                },
                proto,
                port,
                target,
                node_port: node_ports.get(i).copied().unwrap_or(0),
            })
            .collect();

        // Replicas occupy consecutive pod slots; slot s is on node s % nodes,
        // so a Service's pods spread over the nodes.
        let slots = self.nodes * 253;
        let replicas = if empty {
            0
        } else {
            ((shape.endpoints_per_service as f64 * factor).round() as u32).clamp(1, slots)
        };
        let mut pods: Vec<Pod> = (0..replicas)
            .map(|i| {
                let slot = (start + i) % slots;
                let node = slot % self.nodes;
                // Scramble host numbers per node (a bijection on 0..253,
                // which is 11 x 23) so replicas do not line up across nodes.
                let host = (slot / self.nodes * 37 + node * 101) % 253;
                Pod {
                    addr: self.net.pod_ip(node, host),
                    local: node == self.node,
                }
            })
            .collect();
        sort_pods(&mut pods, self.net.v6);

        ServiceSpec {
            cluster_ip,
            kind,
            local,
            affinity,
            lb_ip,
            ranges,
            hc_node_port,
            ports,
            pods,
        }
    }
}

/// Sorts pods the way kube-proxy's endpoint slice cache does: by the
/// endpoint string `ip:port` (`[ip]:port` for IPv6). The order is the same
/// for every port, because strings first differ inside the address or where
/// one address ends (`:`/`]`) and the other goes on.
fn sort_pods(pods: &mut [Pod], v6: bool) {
    let mut keyed: Vec<(String, Pod)> = pods
        .iter()
        .map(|p| {
            let mut key = String::with_capacity(48);
            text::push_host_port(&mut key, p.addr, 0, v6);
            (key, *p)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    for (dst, (_, p)) in pods.iter_mut().zip(keyed) {
        *dst = p;
    }
}

/// Rules kube-proxy (and kubelet) write whatever the Services are.
pub(crate) fn fixed_rule_count(layout: Layout, v6: bool) -> usize {
    crate::emit::fixed_rules(layout, v6).len() + 1 // + the KUBE-NODEPORTS tail rule
}

/// Rules one Service port contributes, mirroring `emit` exactly.
pub(crate) fn port_rule_count(svc: &ServiceSpec, port: &PortSpec, layout: Layout) -> usize {
    let n = svc.pods.len();
    let l = svc.local_pods();
    let np = port.node_port != 0;
    let lb = svc.kind == Kind::LoadBalancer;
    let hc = usize::from(svc.hc_node_port != 0);
    let per_ep = if svc.affinity { 2 } else { 1 };
    let ranges = source_ranges(false, svc.ranges).len();
    let allow = usize::from(ranges > 0 && ranges_allow_node(svc.ranges));
    if n == 0 {
        return 1 + usize::from(np) + usize::from(lb) + hc;
    }
    let mut c = 1 + usize::from(lb) + 2 * n + hc; // KUBE-SERVICES, SEP chains
    match layout {
        Layout::Modern => {
            c += 1 + n * per_ep; // KUBE-SVC
            c += usize::from(np); // KUBE-NODEPORTS
            if np || lb {
                c += if svc.local { 3 + usize::from(l > 0) } else { 2 };
            }
            if svc.local {
                c += l * per_ep;
                if l == 0 {
                    c += usize::from(np) + usize::from(lb);
                }
            }
            if lb && ranges > 0 {
                c += ranges + allow + 1 + 1; // KUBE-FW + KUBE-PROXY-FIREWALL
            }
        }
        Layout::Legacy => {
            c += 1 + usize::from(np && !svc.local) + n * per_ep; // KUBE-SVC
            if np {
                c += if svc.local { 2 } else { 1 };
            }
            if lb {
                c += usize::from(!svc.local) + if ranges == 0 { 1 } else { ranges + allow } + 1;
            }
            if svc.local {
                c += 3 + if l == 0 { 1 } else { l * per_ep };
            }
        }
    }
    c
}
