"""A packet tracer over the table `nftables.py` plans: where a new connection goes, with what probability, and
whether it is masqueraded, dropped or rejected — without a kernel.

Golden transaction text shows what the planner writes, not what netfilter does with it, and in this layout one
Service's behaviour is spread over a vmap, a shared pick chain, the ct mark and a DNAT map keyed by it. So the
tracer interprets the rules as netfilter would, for the first packet of an IPv4 connection:

- Hooks in kernel order, each hook's base chains by priority (read from the chains' specs, not assumed). A packet
  arriving on an interface passes prerouting; routing then hands it to input (a node address) or forward, then
  postrouting. A packet a process of the node sends passes output and postrouting; if its destination (after
  DNAT) is a node address it loops back over `lo` through prerouting and input, without nat chains (the
  connection's NAT is bound once).
- Verdicts as in the kernel: `dnat` and `masquerade` end their base chain with accept; a `jump` returns, a `goto`
  does not; a base chain falling off its end applies its policy; a verdict-map miss means the rule does not match.
- `numgen random` is explored exhaustively: `trace` returns one `Outcome` per path, with its probability.
- Dynamic (affinity) sets start empty; the caller says who is in them, and each outcome lists what it added.

Rules are parsed, not matched whole: each known expression becomes a small closure, and anything else raises
`TraceError` when the tracer is built, so a new rule shape in the planner cannot be skipped silently.

`apply(table, script)` is the other half: `nft -f -` on an in-memory table, strict where the kernel is strict, so
traces can run over what an incremental sync really sent.
"""

from __future__ import annotations

import ipaddress
import operator
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Literal

from tinykube.proxy.model import NodeConfig
from tinykube.proxy.nftables import TABLE, Chain, Ruleset, Value

__all__ = ["Outcome", "Packet", "TraceError", "apply", "trace"]

IPv4 = ipaddress.IPv4Address
Verdict = Literal["accept", "drop", "reject"]


class TraceError(ValueError):
    """A rule, set, element or command the tracer does not model, or one the kernel would refuse."""


@dataclass(frozen=True, slots=True)
class Packet:
    """The first packet of a connection."""

    src: str
    dst: str
    dport: int
    proto: str = "tcp"
    hook: Literal["prerouting", "output"] = "prerouting"  # arrives on `iif`, or is sent by a process of the node
    iif: str = ""
    routes: tuple[tuple[str, str], ...] = ()  # the node's routes, (CIDR, interface); the longest prefix wins

    def route(self, ip: IPv4) -> str | None:
        """The interface the node sends `ip` out of (None: no route)."""
        found = [(ipaddress.IPv4Network(cidr), dev) for cidr, dev in self.routes]
        matching = sorted((net.prefixlen, dev) for net, dev in found if ip in net)
        return matching[-1][1] if matching else None


@dataclass(frozen=True, slots=True)
class Outcome:
    """One way the connection can go."""

    verdict: Verdict
    dnat: tuple[str, int] | None  # the endpoint it was DNATed to
    masqueraded: bool
    probability: Fraction
    chains: tuple[str, ...]  # every chain it passed, in order
    updated: tuple[tuple[str, str], ...] = ()  # (set, key) that `update @set { … }` added


@dataclass(frozen=True, slots=True)
class _State:
    """The packet and its connection, as the rules see them so far."""

    saddr: IPv4
    daddr: IPv4
    proto: str
    dport: int
    iif: str
    mark: int = 0  # meta mark: the packet's
    ct_mark: int = 0  # the connection's; a new one starts at 0
    dnat: tuple[str, int] | None = None
    masqueraded: bool = False
    probability: Fraction = Fraction(1)
    chains: tuple[str, ...] = ()
    updated: tuple[tuple[str, str], ...] = ()


ACCEPT, DROP, REJECT, RETURN, NEXT = "accept", "drop", "reject", "return", "next"
Signal = str | None  # None: go on with the rule; NEXT: on with the next rule; RETURN or a verdict
Step = Iterator[tuple[Signal, _State]]
Expr = Callable[[_State], Step]
Key = tuple[Any, ...]

# selector words -> (nft type of its value, the _State field it reads)
SELECTORS: dict[tuple[str, ...], tuple[str, str]] = {
    ("ip", "saddr"): ("ipv4_addr", "saddr"),
    ("ip", "daddr"): ("ipv4_addr", "daddr"),
    ("meta", "l4proto"): ("inet_proto", "proto"),
    ("th", "dport"): ("inet_service", "dport"),
    ("meta", "mark"): ("mark", "mark"),
    ("mark",): ("mark", "mark"),
    ("ct", "mark"): ("mark", "ct_mark"),
}
PROTOCOLS = ("tcp", "udp", "sctp")
TYPES = ("ipv4_addr", "inet_proto", "inet_service", "mark")
BITWISE = {"or": operator.or_, "xor": operator.xor, "and": operator.and_}

TOKEN = re.compile(r'"[^"]*"|[{},]|[^\s{},]+')
BASE_SPEC = re.compile(r"type (filter|nat) hook (\w+) priority (-?\d+) ;(?: policy (accept|drop) ;)?")
REGULAR_SPEC = re.compile(r'(?:comment "[^"]*" ;)?')
DECL = re.compile(r'(set|map) \{ type (.+?)(?: : (.+?))? ; ((?:(?:comment "[^"]*"|flags [\w,]+|timeout \d+s) ; )*)\}')
ELEMENT = re.compile(r'(.+?)((?: comment "[^"]*")?(?: : (.+))?)')  # key, the rest, the value


def _value(kind: str, text: str) -> Any:
    """One part of a key or value, parsed as its nft type."""
    try:
        if kind == "ipv4_addr":
            return IPv4(text)
        if kind in ("inet_service", "mark", "integer"):
            return int(text, 0)
    except ValueError:
        pass
    else:
        if kind == "inet_proto" and text in PROTOCOLS:
            return text
    raise TraceError(f"{text!r} is no {kind}")


def _literal(kind: str, text: str) -> Callable[[Any], bool]:
    """A value in a rule; for addresses also a CIDR."""
    if kind == "ipv4_addr" and "/" in text:
        try:
            network = ipaddress.IPv4Network(text)
        except ValueError as err:
            raise TraceError(f"{text!r} is no IPv4 CIDR") from err
        return lambda value: value in network
    wanted = _value(kind, text)
    return lambda value: bool(value == wanted)


def _key_text(key: Key) -> str:
    return " . ".join(map(str, key))


def _reader(parts: list[tuple[str, str]]) -> Callable[[_State], Key]:
    fields = [name for _, name in parts]
    return lambda s: tuple(getattr(s, name) for name in fields)


def _elements(rs: Ruleset) -> Iterator[tuple[str, str, str]]:
    """(set, key, rest) of each element; a destination's numbered endpoints one by one, as `_element_lines` writes
    them."""
    for (name, key), value in rs.elements.items():
        if isinstance(value, tuple):
            for element, text in value:
                yield name, element, text
        else:
            yield name, key, value


class _Tokens:
    """A rule's words, comments left out (they only document)."""

    def __init__(self, where: str, text: str) -> None:
        words: list[str] = TOKEN.findall(text)
        while "comment" in words:
            at = words.index("comment")
            if not words[at + 1 : at + 2] or not words[at + 1].startswith('"'):
                raise TraceError(f"{where}: cannot trace {text!r}: a comment without text")
            del words[at : at + 2]
        self.where, self.text, self.words, self.at = where, text, words, 0

    def more(self) -> bool:
        return self.at < len(self.words)

    def peek(self) -> str:
        return self.words[self.at] if self.more() else ""

    def take(self, *words: str) -> bool:
        if tuple(self.words[self.at : self.at + len(words)]) != words:
            return False
        self.at += len(words)
        return True

    def expect(self, *words: str) -> None:
        if not self.take(*words):
            raise self.error(f"expected {' '.join(words)!r}")

    def next(self) -> str:
        if not self.more():
            raise self.error("unexpected end")
        self.at += 1
        return self.words[self.at - 1]

    def number(self) -> int:
        word = self.next()
        try:
            return int(word, 0)
        except ValueError:
            self.at -= 1
            raise self.error("expected a number") from None

    def end(self) -> None:
        if self.more():
            raise self.error("nothing may follow a verdict")

    def error(self, why: str) -> TraceError:
        return TraceError(f"{self.where}: cannot trace {self.text!r} at {self.peek() or 'its end'!r}: {why}")


def _with(s: _State, name: str, value: int) -> _State:
    changes: dict[str, Any] = {name: value}
    return replace(s, **changes)


def _match(test: Callable[[_State], bool]) -> Expr:
    def expr(s: _State) -> Step:
        yield (None if test(s) else NEXT), s

    return expr


def _statement(change: Callable[[_State], _State]) -> Expr:
    def expr(s: _State) -> Step:
        yield None, change(s)

    return expr


def _fixed(signal: str) -> Expr:
    def expr(s: _State) -> Step:
        yield signal, s

    return expr


def _masquerade(s: _State) -> Step:
    yield ACCEPT, replace(s, masqueraded=True)  # a NAT statement ends with accept


def _numgen(count: int, then: Callable[[_State, int], Step]) -> Expr:
    """`numgen random mod count`: every value, each as likely."""

    def expr(s: _State) -> Step:
        for value in range(count):
            yield from then(replace(s, probability=s.probability / count), value)

    return expr


@dataclass(slots=True)
class _Set:
    keys: tuple[str, ...]
    value: tuple[str, ...] | None  # None: a set; ("verdict",): a verdict map
    elements: dict[Key, Any] = field(default_factory=dict)  # key -> None, an Expr (verdict) or a data tuple


class _Tracer:
    def __init__(self, rs: Ruleset, config: NodeConfig, packet: Packet, members: Mapping[str, Iterable[str]]) -> None:
        self.rs, self.packet = rs, packet
        self.local = [ipaddress.IPv4Network(f"{ip}/32") for ip in config.node_ips]
        self.local.append(ipaddress.IPv4Network("127.0.0.0/8"))
        self.sets = {name: self._declare(name, decl) for name, decl in rs.sets.items()}
        for name, key, rest in _elements(rs):
            self._add_element(name, key, rest)
        for name, keys in members.items():
            for key in keys:
                self._add_element(name, key, "")
        self.chains = {
            name: [self._parse(f"chain {name}", rule) for rule in chain.rules] for name, chain in rs.chains.items()
        }
        self.hooks: dict[str, list[tuple[int, str, str, str]]] = defaultdict(list)  # (priority, name, type, policy)
        for name, chain in rs.chains.items():
            if (base := BASE_SPEC.fullmatch(chain.spec)) is not None:
                self.hooks[base[2]].append((int(base[3]), name, base[1], base[4] or ACCEPT))
            elif not REGULAR_SPEC.fullmatch(chain.spec):
                raise TraceError(f"chain {name}: cannot trace the spec {chain.spec!r}")
        for chains in self.hooks.values():
            chains.sort()

    # -- the table ------------------------------------------------------------------------------------------------

    @staticmethod
    def _declare(name: str, decl: str) -> _Set:
        found = DECL.fullmatch(decl)
        if found is None or (found[1] == "map") != (found[3] is not None) or "interval" in found[4]:
            raise TraceError(f"set {name}: cannot trace {decl!r}")
        keys, value = tuple(found[2].split(" . ")), tuple(found[3].split(" . ")) if found[3] else None
        if not set(keys) <= set(TYPES) or (value and value != ("verdict",) and not set(value) <= set(TYPES)):
            raise TraceError(f"set {name}: cannot trace the type in {decl!r}")
        return _Set(keys, value)

    def _add_element(self, name: str, key: str, rest: str) -> None:
        where = f"element {key!r} of {name}"
        target = self.sets.get(name)
        if target is None:
            raise TraceError(f"{where}: no such set")
        parts, found = key.split(" . "), ELEMENT.fullmatch(key + rest)
        if len(parts) != len(target.keys) or found is None or (found[3] is None) != (target.value is None):
            raise TraceError(f"{where}: does not fit {self.rs.sets[name]!r}")
        typed = tuple(_value(kind, part) for kind, part in zip(target.keys, parts, strict=True))
        if target.value is None:
            target.elements[typed] = None
        elif target.value == ("verdict",):
            tokens = _Tokens(where, found[3])
            verdict = self._verdict(tokens)
            if verdict is None:
                raise tokens.error("expected a verdict")
            tokens.end()
            target.elements[typed] = verdict
        else:
            data = found[3].split(" . ")
            if len(data) != len(target.value):
                raise TraceError(f"{where}: the value does not fit {self.rs.sets[name]!r}")
            target.elements[typed] = tuple(_value(k, v) for k, v in zip(target.value, data, strict=True))

    def _ref(
        self, t: _Tokens, word: str, parts: list[tuple[str, str]], value: tuple[str, ...] | None
    ) -> tuple[str, dict[Key, Any]]:
        """`@name` and its elements, checked against the types the rule uses it with."""
        target = self.sets.get(word[1:]) if word.startswith("@") else None
        if target is None:
            raise t.error(f"no set {word}")
        keys = tuple(kind for kind, _ in parts)
        if target.keys != keys or target.value != value:
            raise t.error(f"{word} holds {target.keys} -> {target.value}, used as {keys} -> {value}")
        return word[1:], target.elements

    def _is_local(self, ip: IPv4) -> bool:
        return any(ip in net for net in self.local)

    # -- rules --------------------------------------------------------------------------------------------------

    def _parse(self, where: str, rule: str) -> list[Expr]:
        tokens = _Tokens(where, rule)
        exprs = []
        while tokens.more():
            exprs.append(self._expr(tokens))
        return exprs

    def _expr(self, t: _Tokens) -> Expr:
        verdict = self._verdict(t)
        if verdict is not None:
            t.end()
            return verdict
        if t.take("ct", "state", "new"):
            return _match(lambda s: True)  # every traced packet opens a connection
        if t.take("ct", "status", "dnat"):
            return _match(lambda s: s.dnat is not None)
        if t.take("fib", "saddr", "type", "local"):
            return _match(lambda s: self._is_local(s.saddr))
        if t.take("fib", "daddr", ".", "iif", "oif", "exists"):
            # the lookup is restricted to the incoming interface: true when the destination routes back out of it
            return _match(lambda s: bool(s.iif) and self.packet.route(s.daddr) == s.iif)
        if t.take("numgen", "random", "mod"):
            count = t.number()
            t.expect("vmap")
            verdicts = self._anonymous_vmap(("integer",), t)
            return _numgen(count, lambda s, value: self._lookup(verdicts, (value,), s))
        if t.take("update"):
            word = t.next()  # the set: checked once the key is known
            t.expect("{")
            parts = self._key(t)
            t.expect("}")
            name, get = self._ref(t, word, parts, None)[0], _reader(parts)
            return _statement(lambda s: replace(s, updated=(*s.updated, (name, _key_text(get(s))))))
        if t.take("dnat", "ip", "to"):
            parts = self._key(t)
            t.expect("map")
            targets, get = self._ref(t, t.next(), parts, ("ipv4_addr", "inet_service"))[1], _reader(parts)
            t.end()
            return lambda s: self._dnat(targets.get(get(s)), s)
        if t.take("masquerade"):
            t.take("fully-random")
            t.end()
            return _masquerade
        return self._selector_expr(t)

    def _verdict(self, t: _Tokens) -> Expr | None:
        for word in (ACCEPT, DROP, REJECT, RETURN):  # reject: a terminal statement, a drop with a reply
            if t.take(word):
                return _fixed(word)
        for word in ("jump", "goto"):
            if t.take(word):
                chain = t.next()
                if chain not in self.rs.chains:
                    raise t.error(f"no chain {chain}")
                return self._jump(chain) if word == "jump" else self._goto(chain)
        return None

    def _jump(self, chain: str) -> Expr:
        def expr(s: _State) -> Step:
            for signal, after in self._chain(chain, s):
                yield (NEXT if signal == RETURN else signal), after  # back here, on with the next rule

        return expr

    def _goto(self, chain: str) -> Expr:
        return lambda s: self._chain(chain, s)  # its return is this chain's return

    def _selector(self, t: _Tokens) -> tuple[str, str] | None:
        for words, found in SELECTORS.items():
            if t.take(*words):
                return found
        return None

    def _key(self, t: _Tokens) -> list[tuple[str, str]]:
        """A selector or a concatenation (`ip daddr . meta l4proto . th dport`): (type, field) of each part."""
        parts = []
        while True:
            part = self._selector(t)
            if part is None:
                raise t.error("unknown expression")
            parts.append(part)
            if not t.take("."):
                return parts

    def _selector_expr(self, t: _Tokens) -> Expr:
        parts = self._key(t)
        get = _reader(parts)
        if t.take("vmap"):
            if t.peek().startswith("@"):
                verdicts = self._ref(t, t.next(), parts, ("verdict",))[1]
            else:
                verdicts = self._anonymous_vmap(tuple(kind for kind, _ in parts), t)
            return lambda s: self._lookup(verdicts, get(s), s)
        if len(parts) != 1:
            raise t.error("a concatenation only as a map key")
        kind, name = parts[0]
        if t.take("set"):
            return self._assign(kind, name, t)
        if t.take("and"):
            mask = t.number()
            t.expect("==")
            wanted = t.number()
            return _match(lambda s: getattr(s, name) & mask == wanted)
        if t.peek().startswith("@"):
            set_name, members = self._ref(t, t.next(), parts, None)
            return _match(lambda s: get(s) in members or (set_name, _key_text(get(s))) in s.updated)
        negate = t.take("!=")
        test = self._values(kind, t)
        return _match(lambda s: test(getattr(s, name)) != negate)

    def _assign(self, kind: str, name: str, t: _Tokens) -> Expr:
        if kind != "mark":
            raise t.error("only marks are set")
        if t.take("numgen", "random", "mod"):
            count = t.number()
            t.expect("offset")
            offset = t.number()
            return _numgen(count, lambda s, value: iter([(None, _with(s, name, offset + value))]))
        source = self._selector(t)
        if source is None:
            value = t.number()
            return _statement(lambda s: _with(s, name, value))
        op = BITWISE.get(t.next())
        if source[1] != name or op is None:
            raise t.error("expected `<mark> set <same mark> or|xor|and <number>`")
        operand = t.number()
        return _statement(lambda s: _with(s, name, op(getattr(s, name), operand)))

    def _values(self, kind: str, t: _Tokens) -> Callable[[Any], bool]:
        """A literal, or an anonymous set `{ a, b }`."""
        if not t.take("{"):
            return _literal(kind, t.next())
        tests = [_literal(kind, t.next())]
        while t.take(","):
            tests.append(_literal(kind, t.next()))
        t.expect("}")
        return lambda value: any(test(value) for test in tests)

    def _anonymous_vmap(self, kinds: tuple[str, ...], t: _Tokens) -> dict[Key, Expr]:
        """`{ 0 : goto a , 1 : goto b }`"""
        t.expect("{")
        verdicts = {}
        while True:
            key = [_value(kinds[0], t.next())]
            for kind in kinds[1:]:
                t.expect(".")
                key.append(_value(kind, t.next()))
            t.expect(":")
            verdict = self._verdict(t)
            if verdict is None:
                raise t.error("expected a verdict")
            verdicts[tuple(key)] = verdict
            if not t.take(","):
                break
        t.expect("}")
        return verdicts

    @staticmethod
    def _lookup(verdicts: Mapping[Key, Expr], key: Key, s: _State) -> Step:
        verdict = verdicts.get(key)
        return verdict(s) if verdict is not None else iter([(NEXT, s)])  # a miss: the rule does not match

    @staticmethod
    def _dnat(target: Key | None, s: _State) -> Step:
        if target is None:  # a map miss: no DNAT, and the rule does not match
            yield NEXT, s
            return
        ip, port = target
        yield ACCEPT, replace(s, daddr=ip, dport=port, dnat=(str(ip), port))  # a NAT statement ends with accept

    # -- chains and hooks ---------------------------------------------------------------------------------------

    def _chain(self, name: str, s: _State) -> Step:
        return self._rules(self.chains[name], 0, replace(s, chains=(*s.chains, name)))

    def _rules(self, rules: list[list[Expr]], at: int, s: _State) -> Step:
        if at == len(rules):
            yield RETURN, s
            return
        for signal, after in self._rule(rules[at], 0, s):
            if signal == NEXT:
                yield from self._rules(rules, at + 1, after)
            else:
                yield signal, after

    def _rule(self, exprs: list[Expr], at: int, s: _State) -> Step:
        if at == len(exprs):
            yield NEXT, s
            return
        for signal, after in exprs[at](s):
            if signal is None:
                yield from self._rule(exprs, at + 1, after)
            else:
                yield signal, after

    def _hook(self, hook: str, s: _State, *, nat: bool = True) -> Step:
        return self._base([c for c in self.hooks.get(hook, []) if nat or c[2] != "nat"], s)

    def _base(self, chains: list[tuple[int, str, str, str]], s: _State) -> Step:
        """The hook's base chains in turn: an accept passes the packet on to the next one, the others end it."""
        if not chains:
            yield ACCEPT, s
            return
        _, name, _, policy = chains[0]
        for signal, after in self._chain(name, s):
            verdict = policy if signal == RETURN else signal
            if verdict == ACCEPT:
                yield from self._base(chains[1:], after)
            else:
                yield verdict, after

    @staticmethod
    def _then(results: Step, after: Callable[[_State], Step]) -> Step:
        for signal, s in results:
            if signal == ACCEPT:
                yield from after(s)
            else:
                yield signal, s

    def run(self) -> Step:
        p = self.packet
        start = _State(IPv4(p.src), IPv4(p.dst), p.proto, p.dport, p.iif)
        if p.hook == "output":
            return self._then(self._hook("output", start), self._sent)
        return self._then(self._hook("prerouting", start), self._routed)

    def _routed(self, s: _State) -> Step:
        """The routing decision, on the destination after DNAT."""
        if self._is_local(s.daddr):
            return self._hook("input", s)
        return self._then(self._hook("forward", s), lambda after: self._hook("postrouting", after))

    def _sent(self, s: _State) -> Step:
        leaving = self._hook("postrouting", s)
        return self._then(leaving, self._looped) if self._is_local(s.daddr) else leaving

    def _looped(self, s: _State) -> Step:
        """Back in over `lo` to a node address: prerouting without nat chains (NAT is bound once), then input."""
        back = replace(s, iif="lo")
        return self._then(self._hook("prerouting", back, nat=False), lambda after: self._hook("input", after))


def trace(
    ruleset: Ruleset, packet: Packet, config: NodeConfig, *, members: Mapping[str, Iterable[str]] | None = None
) -> list[Outcome]:
    """Every way a new connection starting with `packet` can go through `ruleset` on the node `config` describes.
    `members`: who is in the dynamic (affinity) sets, by set name. Raises TraceError on what it cannot model."""
    tracer = _Tracer(ruleset, config, packet, members or {})
    outcomes = []
    for verdict, s in tracer.run():
        if verdict not in (ACCEPT, DROP, REJECT):
            raise TraceError(f"{verdict!r} escaped its chain ({' -> '.join(s.chains)})")
        outcomes.append(Outcome(verdict, s.dnat, s.masqueraded, s.probability, s.chains, s.updated))  # type: ignore[arg-type]
    return outcomes


# ---------------------------------------------------------------------------------------------------------------
# The table a transaction leaves behind

COMMAND = re.compile(rf"(add|delete|flush) (table|chain|rule|set|map|element) {TABLE}(?: (\S+))?(?: (.*))?")
ITEM = re.compile(r'(?:[^,"]|"[^"]*")+')  # one element of `{ a, b comment "c" : d }`
CHAIN_REF = re.compile(r"\b(?:jump|goto) ([^\s,{}]+)")
SET_REF = re.compile(r"@([^\s,{}]+)")
TIMEOUT = re.compile(r"timeout \d+s ; ")


def apply(table: Ruleset | None, script: str) -> Ruleset | None:
    """`nft -f -` on an in-memory table (None: there is none): the script's commands in order, on a copy. Strict
    where the kernel is: a missing chain, set or element, a chain or set deleted while a rule or element refers to
    it, a set redeclared differently or an element re-added with another value raise TraceError."""
    rs = None
    if table is not None:  # numbered endpoints as the separate elements they are in the kernel
        elements: dict[tuple[str, str], Value] = {(n, k): v for n, k, v in _elements(table)}
        rs = Ruleset(dict(table.chains), dict(table.sets), elements)
    for line in filter(None, script.splitlines()):
        command = COMMAND.fullmatch(line)
        if command is None:
            raise TraceError(f"cannot apply {line!r}")
        verb, kind, name, rest = command.groups()
        if kind == "table":
            if verb == "delete" and rs is None:
                raise TraceError(f"{line!r}: no table")
            rs = (rs or Ruleset()) if verb == "add" else None
        elif rs is None or name is None:
            raise TraceError(f"{line!r}: no table" if rs is None else f"cannot apply {line!r}")
        else:
            _COMMANDS[verb, "set" if kind == "map" else kind](rs, name, rest or "", line)
    return rs


def _chain_used(rs: Ruleset, name: str) -> bool:
    rules = (rule for chain in rs.chains.values() for rule in chain.rules)
    values = (v for v in rs.elements.values() if isinstance(v, str))
    return any(name in CHAIN_REF.findall(text) for text in (*rules, *values))


def _need(found: bool, line: str, why: str) -> None:
    if not found:
        raise TraceError(f"{line!r}: {why}")


def _add_chain(rs: Ruleset, name: str, rest: str, line: str) -> None:
    spec = rest.removeprefix("{ ").removesuffix(" }")
    held = rs.chains.get(name)
    _need(held is None or not rest or held.spec == spec, line, "a chain's hook and priority cannot change")
    if held is None:
        rs.chains[name] = Chain((), spec)


def _flush_chain(rs: Ruleset, name: str, rest: str, line: str) -> None:
    _need(name in rs.chains and not rest, line, "no such chain")
    rs.chains[name] = Chain((), rs.chains[name].spec)


def _delete_chain(rs: Ruleset, name: str, rest: str, line: str) -> None:
    _need(name in rs.chains and not rest, line, "no such chain")
    _need(not _chain_used(rs, name), line, "the chain is still referenced (EBUSY)")
    del rs.chains[name]


def _add_rule(rs: Ruleset, name: str, rest: str, line: str) -> None:
    _need(name in rs.chains, line, "no such chain")
    _need(all(c in rs.chains for c in CHAIN_REF.findall(rest)), line, "it jumps to a missing chain")
    _need(all(s in rs.sets for s in SET_REF.findall(rest)), line, "it uses a missing set")
    held = rs.chains[name]
    rs.chains[name] = Chain((*held.rules, rest), held.spec)


def _add_set(rs: Ruleset, name: str, rest: str, line: str) -> None:
    """A set is redeclared with another timeout (kernels since 6.x update it), never another type or flags."""
    decl = f"{line.split()[1]} {rest}"
    held = rs.sets.get(name, decl)
    _need(TIMEOUT.sub("", held) == TIMEOUT.sub("", decl), line, "a set's type and flags cannot change (EEXIST)")
    rs.sets[name] = decl


def _delete_set(rs: Ruleset, name: str, rest: str, line: str) -> None:
    _need(name in rs.sets and not rest, line, "no such set")
    rules = (rule for chain in rs.chains.values() for rule in chain.rules)
    _need(not any(name in SET_REF.findall(rule) for rule in rules), line, "a rule still uses the set (EBUSY)")
    del rs.sets[name]
    for element in [e for e in rs.elements if e[0] == name]:
        del rs.elements[element]


def _read_elements(rest: str, line: str) -> list[tuple[str, str]]:
    _need(rest.startswith("{ ") and rest.endswith(" }"), line, "expected `{ element, … }`")
    items = []
    for item in ITEM.findall(rest[2:-2]):
        found = ELEMENT.fullmatch(item.strip())
        _need(found is not None, line, f"cannot read the element {item!r}")
        assert found is not None
        items.append((found[1], found[2]))
    return items


def _add_element(rs: Ruleset, name: str, rest: str, line: str) -> None:
    _need(name in rs.sets, line, "no such set")
    for key, value in _read_elements(rest, line):
        _need(all(c in rs.chains for c in CHAIN_REF.findall(value)), line, f"{key}: to a missing chain")
        _need(rs.elements.get((name, key), value) == value, line, f"{key} is there with another value (EEXIST)")
        rs.elements[name, key] = value


def _delete_element(rs: Ruleset, name: str, rest: str, line: str) -> None:
    for key, value in _read_elements(rest, line):
        _need((name, key) in rs.elements and not value, line, f"no element {key} (ENOENT)")
        del rs.elements[name, key]


_COMMANDS: dict[tuple[str, str], Callable[[Ruleset, str, str, str], None]] = {
    ("add", "chain"): _add_chain,
    ("flush", "chain"): _flush_chain,
    ("delete", "chain"): _delete_chain,
    ("add", "rule"): _add_rule,
    ("add", "set"): _add_set,
    ("delete", "set"): _delete_set,
    ("add", "element"): _add_element,
    ("delete", "element"): _delete_element,
}
