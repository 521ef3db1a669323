"""Where the oracle's grapheme clusters differ from ``regex``'s. Generated.

Produced by tools/gen_grapheme_tables.py from tokenizers 0.23.3
and regex 2026.11.19: code point -> a char that regex clusters as the oracle
clusters that code point. REGEX_FINGERPRINT hashes the regex properties these were
checked against.
"""

REGEX_VERSION = "2026.11.19"
REGEX_FINGERPRINT = "f7b8d5fcccabab6350c096a57f3a4630705eb2cf515b63ff495106332f242934"

STAND_INS = {
    0x5C8: "a",
    0x5C9: "a",
    0xB53: "a",
    0xB54: "a",
    0x1ADE: "a",
    0x1ADF: "a",
    0x1AEC: "a",
    0x1AED: "a",
    0x1AEE: "a",
    0x1AEF: "a",
    0x1AF0: "a",
    0x10ECB: "a",
    0x10ECC: "a",
    0x10ECD: "a",
    0x10ECE: "a",
    0x10ECF: "a",
    0x10EF0: "a",
    0x10EF1: "a",
    0x10EF2: "a",
    0x10EF3: "a",
    0x10EF4: "a",
    0x10EF5: "a",
    0x10EF6: "a",
    0x10EF7: "a",
    0x10EF8: "a",
    0x10EF9: "a",
    0x11DF0: "a",
    0x1D127: "a",
    0x1D128: "a",
    0x1D250: "a",
    0x1D251: "a",
    0x1D252: "a",
    0x1D25B: "a",
    0x1D25C: "a",
    0x1D25F: "a",
    0x1D280: "a",
    0x1D281: "a",
    0x1F1AE: "©",
    0x1F7DA: "©",
    0x1F7DB: "©",
    0x1F7F1: "©",
    0x1F7F2: "©",
    0x1F7F3: "©",
    0x1F7F4: "©",
    0x1F7F5: "©",
    0x1F7F6: "©",
    0x1F7F7: "©",
    0x1F7F8: "©",
    0x1F7F9: "©",
    0x1F7FA: "©",
    0x1F7FB: "©",
    0x1F7FC: "©",
    0x1F7FD: "©",
    0x1F7FE: "©",
    0x1F7FF: "©",
}
