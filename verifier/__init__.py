"""benchreg's standalone report verifier: checks a signed decision report with nothing but the report itself and
the registry's published public material (its report-signing certificate bundle and its audit log's verifier key).

Plain Python on purpose: it imports protocol/ (canonical form, signed notes, Merkle proofs) and third-party
libraries (pyHanko, cryptography), never Django, the registry's settings or its database, so a third party can
run it anywhere, and `benchreg verify` answers in well under a second. The registry uses the same code for
`POST /api/v1/reports/verify`.
"""

import warnings

from cryptography.utils import CryptographyDeprecationWarning

# pyHanko imports cryptography's DSA types (which benchreg never signs with), and recent cryptography releases warn
# on that import: a line of noise in every command that signs or verifies a report. Only that warning, only from
# pyHanko's import, is silenced; this package is imported before its modules, or the registry's reports, import
# pyHanko.
warnings.filterwarnings(
    "ignore", message="DSA is deprecated", category=CryptographyDeprecationWarning, module=r"pyhanko\."
)

EVIDENCE_KIND = "benchreg.report-evidence/1"
ATTACHMENT_NAME = "benchreg-evidence.json"
# The file name the registry gives its published certificate (the API's download, the demo's copy, the report's
# verify command), so a command pasted from a report finds the file the registry handed out.
CERTIFICATE_FILE = "benchreg-report-certificate.pem"
# The signature's /Reason names the evidence digest, so the digest is covered by the signature itself.
REASON_PREFIX = "benchreg decision report; evidence "
