"""Tests for dramigrate.cel (DRA selector evaluation) and dramigrate.inventory."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dramigrate.cel import (
    MAX_EXPRESSION_LENGTH,
    CelError,
    Quantity,
    Semver,
    compile_selector,
    device_matches,
)
from dramigrate.inventory import Device, VersionValue, load_inventory

INVENTORIES = Path(__file__).resolve().parent.parent / "fixtures" / "inventories"
NV = "device.attributes['gpu.nvidia.com']"
NV_MEMORY = "device.capacity['gpu.nvidia.com'].memory"


def inventory(name: str) -> list[Device]:
    return load_inventory(INVENTORIES / name)


def selected(expression: str, devices: list[Device]) -> list[Device]:
    selector = compile_selector(expression)
    return [d for d in devices if selector.matches(d.driver, d.attributes, d.capacity)]


def evaluate(expression: str) -> bool:
    """Evaluate an expression that does not depend on the device."""
    return compile_selector(expression).matches("test.example.com", {}, {})


# --------------------------------------------------------------------------
# Quantity parsing (port of resource.ParseQuantity)
# --------------------------------------------------------------------------

GI = 2**30
MI = 2**20


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("1", 1),
        ("1Ki", 1024),
        ("1Gi", GI),
        ("81559Mi", 81559 * MI),
        ("80Gi", 80 * GI),
        ("1k", 1000),
        ("1M", 10**6),
        ("1E", 10**18),
        ("12E", 12 * 10**18),  # decimal values are not capped
        ("1e3", 1000),
        ("1E-3", Fraction(1, 1000)),
        ("1.3E+6", 1_300_000),
        ("1.5", Fraction(3, 2)),
        ("100m", Fraction(1, 10)),
        ("5n", Fraction(5, 10**9)),
        ("4u", Fraction(4, 10**6)),
        ("1.", 1),
        ("1.G", 10**9),
        (".5", Fraction(1, 2)),
        ("-1Gi", -GI),
        ("+1Ki", 1024),
        ("0.5Mi", MI // 2),
        ("100.035Ki", Fraction(10243584, 100)),
        ("0.05Gi", Fraction(536870912, 10)),
        ("3.001n", Fraction(4, 10**9)),  # rounded up to a multiple of 1n
        ("0.9n", Fraction(1, 10**9)),
        ("1.1E-9", Fraction(2, 10**9)),
        ("0.000000000001Ki", Fraction(2, 10**9)),
        ("-0.0000000001", Fraction(-1, 10**9)),  # rounded away from zero
        ("9Ei", 2**63 - 1),  # BinarySI is capped at 2^63-1
        ("9223372036854775807Ki", 2**63 - 1),
        (".", 0),  # accepted by parseQuantityString
        ("Mi", 0),  # ParseQuantity's fast path accepts it, although quantity.go's comment says otherwise
    ],
)
def test_quantity_parse(text: str, expected: int | Fraction) -> None:
    assert Quantity.parse(text).value == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "1.1.M",
        "1+1.0M",
        "0.1mi",
        "0.1am",
        "aoeu",
        ".5i",
        "1i",
        "-3.01i",
        "-3.01e-",
        "10Mo",
        "10Mm",
        "200K",
        "1KiB",
        "1e",
        "1e1.5",
        "1,5",
        "Three",
        "１",
        "٣",
        "e-10",
    ],
)
def test_quantity_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        Quantity.parse(text)
    assert evaluate(f"!isQuantity('{text}')")
    with pytest.raises(CelError):
        evaluate(f"quantity('{text}').sign() == 0")


@pytest.mark.parametrize(
    "expression",
    [
        "quantity('81559Mi').compareTo(quantity('80Gi')) < 0",
        "quantity('81920Mi').compareTo(quantity('80Gi')) == 0",
        "quantity('1Gi').compareTo(quantity('1024Mi')) == 0",
        "quantity('1Gi') == quantity('1024Mi')",
        "quantity('1G').compareTo(quantity('1Gi')) == -1",
        "quantity('50M').isLessThan(quantity('50Mi'))",
        "quantity('50Mi').isGreaterThan(quantity('50M'))",
        "quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')",
        "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')",
        "quantity('1000m') == quantity('1')",
        "quantity('10000T').compareTo(quantity('100Gi')) == 1",
        "quantity('23034Mi').isLessThan(quantity('24Gi'))",
        "quantity('50k').add(quantity('20')) == quantity('50.02k')",
        "quantity('50k').sub(20) == quantity('49980')",
        "quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20",
        "quantity('50k').asInteger() == 50000",
        "quantity('-5Mi').sign() == -1 && quantity('0').sign() == 0 && quantity('1n').sign() == 1",
        "quantity('50.703k').asApproximateFloat() == 50703.0",
        "quantity('50').isInteger()",
        "quantity('1k').isInteger() && quantity('1.5k').isInteger()",
        # Representation quirks of resource.Quantity.AsInt64 (inf.Dec or negative scale => false):
        "!quantity('1000m').isInteger()",
        "!quantity('1.5Gi').isInteger()",
        "!quantity('9999999999999999999999999999999999999G').isInteger()",
        "isQuantity('1.3Gi') && isQuantity('10000k') && !isQuantity('200K')",
    ],
)
def test_quantity_functions(expression: str) -> None:
    assert evaluate(expression)


def test_quantity_errors_are_cel_errors() -> None:
    with pytest.raises(CelError, match="cannot convert value to integer"):
        evaluate("quantity('9999999999999999999999999999999999999G').asInteger() == 0")
    with pytest.raises(CelError, match="no matching overload"):
        evaluate("quantity('1') < quantity('2')")  # Quantity has no ordering operators
    with pytest.raises(CelError, match="no matching overload"):
        evaluate("quantity('1Gi').compareTo(semver('1.0.0')) == 0")


_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


@st.composite
def quantity_texts(draw: st.DrawFn) -> tuple[str, Fraction]:
    unit = draw(st.sampled_from(sorted(_UNITS)))
    places = draw(st.integers(min_value=0, max_value=3))
    limit = 2**60 // _UNITS[unit] * 10**places
    mantissa = draw(st.integers(min_value=-limit, max_value=limit))
    digits = str(abs(mantissa)).rjust(places + 1, "0")
    number = digits if places == 0 else f"{digits[:-places]}.{digits[-places:]}"
    sign = "-" if mantissa < 0 else draw(st.sampled_from(["", "+"]))
    return f"{sign}{number}{unit}", Fraction(mantissa, 10**places) * _UNITS[unit]


_COMPARE = {
    -1: compile_selector("device.capacity['t.example.com'].a.compareTo(device.capacity['t.example.com'].b) == -1"),
    0: compile_selector("device.capacity['t.example.com'].a.compareTo(device.capacity['t.example.com'].b) == 0"),
    1: compile_selector("device.capacity['t.example.com'].a.compareTo(device.capacity['t.example.com'].b) == 1"),
}
_SUM = compile_selector(
    "cel.bind(c, device.capacity['t.example.com'], c.a.add(c.b).sub(c.b) == c.a && c.a.sub(c.a).sign() == 0)"
)


@settings(max_examples=200, deadline=None)
@given(quantity_texts(), quantity_texts())
def test_quantity_compare_matches_exact_byte_counts(first: tuple[str, Fraction], second: tuple[str, Fraction]) -> None:
    (text_a, exact_a), (text_b, exact_b) = first, second
    assert Quantity.parse(text_a).value == exact_a
    expected = (exact_a > exact_b) - (exact_a < exact_b)
    capacity = {"t.example.com": {"a": text_a, "b": text_b}}
    for result, selector in _COMPARE.items():
        assert selector.matches("t.example.com", {}, capacity) is (result == expected)
    assert _SUM.matches("t.example.com", {}, capacity)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**62))
def test_quantity_binary_suffixes_agree_with_byte_counts(count: int) -> None:
    as_bytes = Quantity.parse(str(count))
    for unit in ("Ki", "Mi", "Gi"):
        whole, rest = divmod(count, _UNITS[unit])
        in_unit = Quantity.parse(f"{whole}{unit}")
        assert in_unit.compare(as_bytes) == (0 if rest == 0 else -1)


# --------------------------------------------------------------------------
# Semver
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('v1.2', true) == semver('1.2.0')",
        "semver('1', true) == semver('1.0.0')",
        "semver('01.01.01', true) == semver('1.1.1')",
        "semver('v8.0', true).compareTo(semver('8.0.0')) == 0",
        "isSemver('1.0.0') && !isSemver('v1.0') && isSemver('v1.0', true) && !isSemver('hello')",
        "!isSemver('1.0') && !isSemver('01.0.0') && !isSemver('1.0.0-') && !isSemver('1.0.0+')",
        "!isSemver('1.0-rc1', true)",  # a short version may not carry pre-release data
        "semver('1.2.3').compareTo(semver('2.0.0')) == -1 && semver('1.2.3').compareTo(semver('0.1.2')) == 1",
        "semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",
        "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
        "semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))",
        "semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))",
        "semver('1.0.0+build.1') == semver('1.0.0+build.2')",
        "semver('535.104.5').isGreaterThan(semver('535.104.4'))",
    ],
)
def test_semver_functions(expression: str) -> None:
    assert evaluate(expression)


def test_semver_parse_errors() -> None:
    with pytest.raises(CelError, match="No Major.Minor.Patch"):
        evaluate("semver('1.0').major() == 1")
    with pytest.raises(CelError, match="leading zeroes"):
        evaluate("semver('535.104.05').major() == 535")
    assert str(Semver.parse("v2.3", normalize=True)) == "2.3.0"


# --------------------------------------------------------------------------
# Strings extension, equality, macros, cel.bind
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "'NVIDIA A100-SXM4-80GB'.replace(' ', '-') == 'NVIDIA-A100-SXM4-80GB'",
        "'a b c'.replace(' ', '', 1) == 'ab c'",
        "'NVIDIA L4'.lowerAscii() == 'nvidia l4' && 'gpu'.upperAscii() == 'GPU'",
        "'  Gaudi2 \\t'.trim() == 'Gaudi2'",
        "'cpx_nps4'.split('_') == ['cpx', 'nps4'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']",
        "'abc'.split('') == ['a', 'b', 'c']",
        "['a', 'b'].join('-') == 'a-b' && ['a', 'b'].join() == 'ab'",
        "'NVIDIA H100 80GB HBM3'.indexOf('H100') == 7 && 'abc'.indexOf('x') == -1",
        "'abcabc'.lastIndexOf('bc') == 4 && 'abcabc'.indexOf('bc', 2) == 4",
        "'A100-SXM4'.substring(5) == 'SXM4' && 'A100-SXM4'.substring(0, 4) == 'A100'",
        "'gpu'.charAt(0) == 'g' && 'gpu'.charAt(3) == ''",
        "'NVIDIA A100-SXM4-40GB'.matches('^NVIDIA A100[ -]')",
        "'mig-1g.5gb'.find('[0-9]g') == '1g' && 'a1b22'.findAll('[0-9]+') == ['1', '22']",
        "'abc'.startsWith('ab') && 'abc'.endsWith('bc') && 'abc'.contains('b') && size('abc') == 3",
        "[1, 2, 3].exists(x, x > 2) && [1, 2].all(x, x > 0) && [1, 2].map(x, x * 2) == [2, 4]",
        "[1, 2, 3].filter(x, x > 1).size() == 2 && [1, 2, 3].exists_one(x, x == 2)",
        "1 == 1.0 && 1 < 1.5 && 2u == 2",  # cross-type numeric comparisons (Kubernetes >= 1.28)
        "'1' != 1 && !('a' == 1)",  # heterogeneous equality is false, not an error
        "cel.bind(x, 40, x + 2 == 42)",
        "cel.bind(xs, [1, 2, 3], xs.exists(x, cel.bind(y, x * 2, y == 6)))",
        "[1, 2].indexOf(2) == 1 && [1, 2, 1].lastIndexOf(1) == 2",
        "[1, 2].includes(2) && 'x'.includes('x')",
    ],
)
def test_builtin_and_extension_functions(expression: str) -> None:
    assert evaluate(expression)


def test_compile_errors() -> None:
    with pytest.raises(CelError, match="undeclared reference to 'nope'"):
        compile_selector("nope('x')")
    with pytest.raises(CelError, match="undeclared reference to 'reverse'"):
        compile_selector("'abc'.reverse() == 'cba'")  # strings extension v3, not in Kubernetes
    with pytest.raises(CelError, match="undefined field 'foo'"):
        compile_selector("device.foo == 'x'")
    with pytest.raises(CelError, match="compilation failed"):
        compile_selector("device.driver ==")
    with pytest.raises(CelError, match="cel.bind"):
        compile_selector("cel.bind(1, 2, 3)")
    with pytest.raises(CelError):
        compile_selector("")


def test_result_must_be_bool() -> None:
    with pytest.raises(CelError, match="could not be converted to bool"):
        evaluate("1 + 1")


def test_expression_length_limit() -> None:
    exact = "true" + " " * (MAX_EXPRESSION_LENGTH - 4)
    assert len(exact) == 10 * 1024
    assert compile_selector(exact).matches("d.example.com", {}, {})
    with pytest.raises(CelError, match="too long"):
        compile_selector(exact + " ")
    # The apiserver measures bytes (Go len): 'ü' is two bytes in UTF-8.
    multibyte = "'" + "ü" * 5200 + "' != ''"
    assert len(multibyte) < MAX_EXPRESSION_LENGTH < len(multibyte.encode())
    with pytest.raises(CelError, match="too long"):
        compile_selector(multibyte)


# --------------------------------------------------------------------------
# The device variable: domains, unknown names, versions
# --------------------------------------------------------------------------

DEVICE_ATTRIBUTES = {
    "gpu.nvidia.com": {
        "productName": "NVIDIA A100-SXM4-80GB",
        "cudaComputeCapability": VersionValue("8.0.0"),
        "driverVersion": {"version": "580.126.20"},  # the API form is accepted too
        "type": "gpu",
    },
    "resource.kubernetes.io": {"pcieRoot": "pci0000:64"},
}
DEVICE_CAPACITY = {"gpu.nvidia.com": {"memory": "80Gi"}}


def matches(expression: str) -> bool:
    return compile_selector(expression).matches("gpu.nvidia.com", DEVICE_ATTRIBUTES, DEVICE_CAPACITY)


def test_unknown_domain_is_an_empty_map() -> None:
    assert not matches("'x' in device.attributes['nope.example.com']")
    assert matches("size(device.attributes['nope.example.com']) == 0")
    assert matches("size(device.capacity['nope.example.com']) == 0")
    assert not matches("'nope.example.com' in device.attributes")
    assert matches("'gpu.nvidia.com' in device.attributes")


def test_unknown_name_in_known_domain_is_an_error() -> None:
    with pytest.raises(CelError, match="no such"):
        matches(f"{NV}.missing == 'x'")
    with pytest.raises(CelError, match="no such"):
        matches("device.attributes['nope.example.com'].x == 'x'")
    # Guarded lookups do not fail.
    assert not matches(f"has({NV}.missing) && {NV}.missing == 'x'")
    assert not matches(f"'missing' in {NV} && {NV}.missing == 'x'")
    assert matches(f"{NV}.missing == 'x' || true")  # CEL's commutative || absorbs the error


def test_versions_are_semver_objects() -> None:
    assert matches(f"{NV}.cudaComputeCapability.major() == 8 && {NV}.cudaComputeCapability.minor() == 0")
    assert matches(f"{NV}.cudaComputeCapability == semver('8.0.0')")
    assert matches(f"{NV}.driverVersion.isGreaterThan(semver('535.104.5'))")
    # Comparing a Semver with a string is a runtime error in Kubernetes (Semver.Equal).
    with pytest.raises(CelError, match="no matching overload"):
        matches(f"{NV}.cudaComputeCapability == '8.0.0'")


def test_driver_and_capacity_fields() -> None:
    assert matches("device.driver == 'gpu.nvidia.com' && !device.allowMultipleAllocations")
    assert matches(f"{NV_MEMORY}.compareTo(quantity('40Gi')) >= 0")
    assert matches(f"{NV_MEMORY}.isGreaterThan(quantity('40Gi'))")
    assert matches("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:64'")


def test_invalid_device_values() -> None:
    selector = compile_selector("true")
    with pytest.raises(CelError, match="capacity gpu.nvidia.com/memory"):
        selector.matches("gpu.nvidia.com", {}, {"gpu.nvidia.com": {"memory": "80GB"}})
    with pytest.raises(CelError, match="attribute gpu.nvidia.com/driverVersion"):
        selector.matches("gpu.nvidia.com", {"gpu.nvidia.com": {"driverVersion": VersionValue("535.104.05")}}, {})


# --------------------------------------------------------------------------
# vendors.md mappings evaluated against the fixture inventories
# --------------------------------------------------------------------------

GPU_PRODUCT_A100_80 = f"{NV}.productName.replace(' ', '-') == 'NVIDIA-A100-SXM4-80GB'"


def test_gfd_product_label_selects_exactly_the_a100_80gb_devices() -> None:
    a100 = inventory("a100-80gb.yaml")
    assert [d.name for d in selected(GPU_PRODUCT_A100_80, a100)] == [f"gpu-{i}" for i in range(8)]
    assert len(a100) == 8
    for other in ("h100.yaml", "mixed.yaml", "a100-mig.yaml", "gpu-efa.yaml"):
        devices = [d for d in inventory(other) if d.driver == "gpu.nvidia.com"]
        assert selected(GPU_PRODUCT_A100_80, devices) == []


def test_nvidia_example_product_regex() -> None:
    # demo/specs/quickstart/v1/gpu-test6.yaml style: lowerAscii().matches()
    expression = f"{NV}.productName.lowerAscii().matches('^.*a100.*$')"
    assert len(selected(expression, inventory("a100-80gb.yaml"))) == 8
    assert len(selected(expression, inventory("mixed.yaml"))) == 2
    assert len(selected(expression, inventory("a100-mig.yaml"))) == 5
    assert selected(expression, inventory("h100.yaml")) == []


def memory_equals_mib(mib: int) -> str:
    """vendors.md §1d: gpu.memory=N  ->  N Mi <= memory < (N+1) Mi."""
    return f"{NV_MEMORY}.compareTo(quantity('{mib}Mi')) >= 0 && {NV_MEMORY}.compareTo(quantity('{mib + 1}Mi')) < 0"


@pytest.mark.parametrize(
    ("mib", "file", "count"),
    [
        (81920, "a100-80gb.yaml", 8),
        (81920, "h100.yaml", 0),
        (81559, "h100.yaml", 8),
        (81559, "a100-80gb.yaml", 0),
        (40960, "mixed.yaml", 2),
        (23034, "mixed.yaml", 2),
        (4864, "a100-mig.yaml", 3),
        (9856, "a100-mig.yaml", 2),
    ],
)
def test_memory_label_as_range(mib: int, file: str, count: int) -> None:
    assert len(selected(memory_equals_mib(mib), inventory(file))) == count


def test_nominal_memory_is_a_trap() -> None:
    # cloud-labels.md caveat 1: H100 "80GB" is 81559Mi < 80Gi; L4 23034Mi < 24Gi.
    naive = f"{NV_MEMORY}.compareTo(quantity('80Gi')) >= 0"
    assert selected(naive, inventory("h100.yaml")) == []
    assert len(selected(naive, inventory("a100-80gb.yaml"))) == 8
    assert selected(f"{NV_MEMORY}.compareTo(quantity('24Gi')) >= 0", inventory("mixed.yaml")) == selected(
        GPU_PRODUCT_A100_80.replace("80GB", "40GB"), inventory("mixed.yaml")
    )


def test_compute_capability_mappings() -> None:
    major8 = f"{NV}.cudaComputeCapability.major() == 8"
    assert len(selected(major8, inventory("a100-80gb.yaml"))) == 8
    assert len(selected(major8, inventory("mixed.yaml"))) == 4  # A100 (8.0) and L4 (8.9)
    assert selected(major8, inventory("h100.yaml")) == []
    exact = f"{major8} && {NV}.cudaComputeCapability.minor() == 0"
    assert [d.node for d in selected(exact, inventory("mixed.yaml"))] == ["gke-a2-highgpu-2g-node-0"] * 2
    at_least = f"{NV}.cudaComputeCapability.compareTo(semver('8.0.0')) >= 0"
    assert len(selected(at_least, inventory("h100.yaml"))) == 8  # ">= 8.0" is not "== 8.0"


def test_architecture_family_mapping() -> None:
    assert len(selected(f"{NV}.architecture == 'Ampere'", inventory("mixed.yaml"))) == 2
    assert len(selected(f"{NV}.architecture == 'Ada Lovelace'", inventory("mixed.yaml"))) == 2
    assert len(selected(f"{NV}.architecture == 'Hopper'", inventory("h100.yaml"))) == 8


def test_mig_profile_mapping() -> None:
    mig = inventory("a100-mig.yaml")
    one_g = f"{NV}.type == 'mig' && {NV}.profile == '1g.5gb'"
    assert [d.name for d in selected(one_g, mig)] == [f"gpu-0-mig-1g5gb-19-{i}" for i in (4, 5, 6)]
    assert len(selected(f"{NV}.type == 'mig' && {NV}.profile == '2g.10gb'", mig)) == 2
    assert selected(f"{NV}.type == 'gpu'", mig) == []
    # MIG memory is below the nominal size in the profile name.
    assert selected(f"{one_g} && {NV_MEMORY}.compareTo(quantity('5Gi')) >= 0", mig) == []
    multiprocessors = "device.capacity['gpu.nvidia.com'].multiprocessors.asInteger()"
    assert len(selected(f"{one_g} && {multiprocessors} == 14", mig)) == 3


def test_amd_partition_mapping() -> None:
    amd = inventory("mi300x.yaml")
    cpx_nps4 = (
        "device.attributes['gpu.amd.com'].computePartition == 'cpx' && "
        "device.attributes['gpu.amd.com'].memoryPartition == 'nps4'"
    )
    # Whole GPUs on node 0 have no computePartition attribute, so the selector must be guarded there.
    guarded = f"'computePartition' in device.attributes['gpu.amd.com'] && {cpx_nps4}"
    chosen = selected(guarded, amd)
    assert len(chosen) == 8
    assert {d.node for d in chosen} == {"mi300x-node-1"}
    with pytest.raises(CelError):
        selected(cpx_nps4, amd)
    per_partition = (
        "cel.bind(cap, device.capacity['gpu.amd.com'], cap.partitions.asInteger() == 8 && "
        "cap.memory == quantity('24Gi') && cap.computeUnits.asInteger() == 38)"
    )
    assert selected(per_partition, chosen) == chosen
    whole = "device.attributes['gpu.amd.com'].type == 'amdgpu'"
    assert len(selected(whole, amd)) == 16  # 8 whole GPUs on node 0, 8 SPX devices on node 1
    # The has()-guarded memory selector from docs/driver-attributes.md.
    memory = (
        "cel.bind(cap, device.capacity['gpu.amd.com'], has(cap.memory) && cap.memory.compareTo(quantity('16Gi')) >= 0)"
    )
    assert len(selected(memory, amd)) == 40
    assert selected("device.attributes['gpu.amd.com'].productName == 'AMD_Instinct_MI300X_OAM'", amd) == amd


def test_gaudi_mapping() -> None:
    gaudi = inventory("gaudi.yaml")
    assert len(selected("device.attributes['gaudi.intel.com'].model == 'Gaudi2'", gaudi)) == 3
    assert len(selected("device.attributes['gaudi.intel.com'].healthy == true", gaudi)) == 2


def test_efa_selector_and_pcie_alignment() -> None:
    node = inventory("gpu-efa.yaml")
    efa = "device.attributes['dra.net'].pciDevice == 'Elastic Fabric Adapter (EFA)'"
    nics = [d for d in node if d.driver == "dra.net"]
    gpus = [d for d in node if d.driver == "gpu.nvidia.com"]
    assert len(selected(efa, nics)) == 32
    # On a GPU the dra.net domain is an empty map, so the unguarded lookup is an error ...
    with pytest.raises(CelError, match="no such"):
        selected(efa, gpus)
    # ... and the guarded forms select only the NICs.
    assert selected(f"device.driver == 'dra.net' && {efa}", node) == nics
    assert selected(f"'pciDevice' in device.attributes['dra.net'] && {efa}", node) == nics
    assert len(selected("device.attributes['dra.net'].rdma", nics)) == 32
    for gpu in gpus:
        root = gpu.attribute("resource.kubernetes.io/pcieRoot")
        same_root = f"device.attributes['resource.kubernetes.io'].pcieRoot == '{root}'"
        assert len(selected(f"device.driver == 'dra.net' && {same_root}", node)) == 4
        assert selected(f"device.driver == 'gpu.nvidia.com' && {same_root}", node) == [gpu]


def test_device_matches_convenience() -> None:
    device = inventory("h100.yaml")[0]
    assert device_matches(f"{NV}.productName == 'NVIDIA H100 80GB HBM3'", device)
    assert not device_matches(GPU_PRODUCT_A100_80, device)


# --------------------------------------------------------------------------
# Inventory loader
# --------------------------------------------------------------------------

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-gpu.example.com-1}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      model: {string: LATEST-GPU-MODEL}
      index: {int: 0}
      driverVersion: {version: 1.0.0}
      resource.kubernetes.io/pcieRoot: {string: pci0000:00}
    capacity:
      memory: {value: 80Gi}
"""


def test_loader_single_slice_and_qualified_names(tmp_path: Path) -> None:
    path = tmp_path / "slice.yaml"
    path.write_text(SLICE)
    [device] = load_inventory(path)
    assert (device.driver, device.pool, device.node, device.name) == ("gpu.example.com", "node-a", "node-a", "gpu-0")
    assert device.attributes == {
        "gpu.example.com": {"model": "LATEST-GPU-MODEL", "index": 0, "driverVersion": "1.0.0"},
        "resource.kubernetes.io": {"pcieRoot": "pci0000:00"},
    }
    assert isinstance(device.attributes["gpu.example.com"]["driverVersion"], VersionValue)
    assert device.capacity == {"gpu.example.com": {"memory": "80Gi"}}
    assert device.attribute("model") == "LATEST-GPU-MODEL"
    assert device_matches("device.attributes['gpu.example.com'].driverVersion.major() == 1", device)


def test_loader_multi_document(tmp_path: Path) -> None:
    path = tmp_path / "slices.yaml"
    path.write_text(SLICE + "---\n" + SLICE.replace("node-a", "node-b"))
    assert [d.node for d in load_inventory(path)] == ["node-a", "node-b"]


def test_loader_fixture_counts() -> None:
    counts = {p.name: len(load_inventory(p)) for p in sorted(INVENTORIES.glob("*.yaml"))}
    assert counts == {
        "a100-80gb.yaml": 8,
        "a100-mig.yaml": 5,
        "gaudi.yaml": 3,
        "gpu-efa.yaml": 40,
        "h100.yaml": 8,
        "mi300x.yaml": 40,
        "mixed.yaml": 4,
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "not a resource.k8s.io ResourceSlice"),
        ("kind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap}\n", r"items\[0\].*not a resource.k8s.io"),
        ("a: [1, 2\n", "invalid YAML"),
        ("", "no ResourceSlice objects"),
        ("- 1\n- 2\n", "expected a Kubernetes object"),
        (SLICE.replace("{version: 1.0.0}", "{version: 1.0}"), "quote it"),
        (SLICE.replace("{string: LATEST-GPU-MODEL}", "{string: a, int: 1}"), "exactly one of"),
        (SLICE.replace("  driver: gpu.example.com\n", ""), "spec.driver is missing"),
    ],
)
def test_loader_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        load_inventory(path)
    assert str(path) in str(info.value)
