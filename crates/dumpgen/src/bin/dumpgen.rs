//! `dumpgen`: print a kube-proxy-shaped `iptables-save` dump, or the same
//! cluster's node in nftables or IPVS mode, to stdout.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

use rulelint_dumpgen::{Layout, NftForm, Shape, generate, generate_ipvs, generate_nft};

const USAGE: &str = "\
usage: dumpgen [--rules N | --services N] [--ipv6] [--legacy] [--counters]
               [--seed N] [--nodes N] [--node I]
               [--mode iptables|nftables|ipvs] [--form list|json|transaction]

Prints to stdout an iptables-save dump of one node of a Kubernetes cluster
whose kube-proxy runs in iptables mode, sized to about N rules; or, with
--mode nftables, the same node of the same cluster (same Services, endpoints
and node) with kube-proxy in nftables mode (table ip kube-proxy, or ip6);
or, with --mode ipvs, that node in IPVS mode as `iptables-save; ipset save;
ipvsadm -Ln; ip addr` prints it (with --ipv6: ip6tables-save, KUBE-6-* sets).

  --rules N     size the cluster so its iptables dump has about N rules
                (default 1000; the result is within 5%)
  --services N  exactly N Service ports instead, up to 500000 (4
                endpoints each on average, nodes grow with the cluster)
  --mode M      iptables (default), nftables or ipvs
  --form F      nftables mode only: list (default; as `nft list ruleset`
                prints it), json (`nft -j list ruleset`) or transaction
                (the `add ...` lines kube-proxy pipes to `nft -f -`)
  --ipv6        an ip6tables-save dump of an IPv6 cluster
  --legacy      Kubernetes 1.23 layout (KUBE-MARK-DROP, KUBE-XLB-*) instead
                of the 1.27+ one (KUBE-EXT-*, KUBE-SVL-*, KUBE-PROXY-FIREWALL)
  --counters    [packets:bytes] counters on every rule, as iptables-save -c
  --seed N      which cluster (default 1); same arguments, same bytes
  --nodes N     nodes in the cluster, 1 to 256 (default: grows with --rules)
  --node I      which node of the cluster the dump is from (default 0)
  -h, --help    print this help
";

struct Args {
    rules: usize,
    ipv6: bool,
    legacy: bool,
    counters: bool,
    seed: u64,
    nodes: Option<u32>,
    node: u32,
    services: Option<usize>,
    nft: Option<NftForm>,
    ipvs: bool,
    form: Option<NftForm>,
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{flag}: not a number: {value}"))
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut args = Args {
        rules: 1000,
        ipv6: false,
        legacy: false,
        counters: false,
        seed: 1,
        nodes: None,
        node: 0,
        services: None,
        nft: None,
        ipvs: false,
        form: None,
    };
    while let Some(arg) = argv.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| argv.next());
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--rules" => args.rules = number(&flag, value())?,
            "--seed" => args.seed = number(&flag, value())?,
            "--nodes" => args.nodes = Some(number(&flag, value())?),
            "--node" => args.node = number(&flag, value())?,
            "--services" => args.services = Some(number(&flag, value())?),
            "--mode" => match value().ok_or("--mode needs a value")?.as_str() {
                "iptables" => (args.nft, args.ipvs) = (None, false),
                "nftables" => (args.nft, args.ipvs) = (Some(NftForm::List), false),
                "ipvs" => (args.nft, args.ipvs) = (None, true),
                other => return Err(format!("--mode: iptables, nftables or ipvs, not {other}")),
            },
            "--form" => {
                args.form = Some(match value().ok_or("--form needs a value")?.as_str() {
                    "list" => NftForm::List,
                    "json" => NftForm::Json,
                    "transaction" => NftForm::Transaction,
                    other => {
                        return Err(format!("--form: list, json or transaction, not {other}"));
                    }
                })
            }
            "--ipv6" | "--legacy" | "--counters" if inline.is_some() => {
                return Err(format!("{flag} takes no value"));
            }
            "--ipv6" => args.ipv6 = true,
            "--legacy" => args.legacy = true,
            "--counters" => args.counters = true,
            _ => return Err(format!("unknown argument: {arg}")),
        }
    }
    if let Some(nodes) = args.nodes
        && !(1..=256).contains(&nodes)
    {
        return Err(format!("--nodes must be 1 to 256, not {nodes}"));
    }
    // Cluster IPs stay unique up to about 500,000 Service ports (a /12).
    if let Some(services) = args.services
        && services > 500_000
    {
        return Err(format!("--services must be at most 500000, not {services}"));
    }
    if let Some(form) = args.form {
        match args.nft {
            Some(_) => args.nft = Some(form),
            None => return Err("--form needs --mode nftables".to_owned()),
        }
    }
    if args.ipvs && (args.legacy || args.counters) {
        return Err("--legacy and --counters do not apply to --mode ipvs".to_owned());
    }
    if args.nft.is_some() && (args.legacy || args.counters) {
        return Err("--legacy and --counters are iptables-mode flags".to_owned());
    }
    Ok(Some(args))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("dumpgen: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut shape = match args.services {
        Some(services) => Shape::with_services(services),
        None => Shape::with_rule_target(args.rules),
    };
    shape.ipv6 = args.ipv6;
    shape.layout = if args.legacy {
        Layout::Legacy
    } else {
        Layout::Modern
    };
    shape.counters = args.counters;
    shape.seed = args.seed;
    if let Some(nodes) = args.nodes {
        shape.nodes = nodes;
    }
    if args.node >= shape.nodes {
        eprintln!(
            "dumpgen: --node {} is not a node of a {}-node cluster\n\n{USAGE}",
            args.node, shape.nodes
        );
        return ExitCode::from(2);
    }
    shape.node = args.node;
    if args.services.is_none() {
        shape = shape.fit_rules(args.rules);
    }

    let dump = match args.nft {
        Some(form) => generate_nft(&shape, form),
        None if args.ipvs => generate_ipvs(&shape),
        None => generate(&shape),
    };
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(dump.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dumpgen: writing the dump: {e}");
            ExitCode::FAILURE
        }
    }
}
