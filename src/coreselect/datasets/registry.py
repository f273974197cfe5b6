"""Registry of standard multi-label benchmarks: sizes, sources, files and SHA-256 checksums.

File paths follow the mirror layout (``mulan/emotions/emotions.arff``): a mirror named by
``COREDATA_MIRROR`` serves every file at ``<mirror>/<path>``, and the cache keeps the same
layout. Without a mirror, each file is fetched from ``upstream_base + upstream path``.

Checksums are those of the files in the project's reference copy (``SHA256SUMS``). Entries
whose files were not available to checksum have ``sha256=None``: :func:`coreselect.datasets.fetch`
refuses to cache such files unless verification is explicitly turned off
(``verify=False`` / ``--no-verify``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from coreselect.errors import DatasetError

__all__ = ["DatasetFile", "DatasetInfo", "REGISTRY", "get", "find", "find_file", "names", "close_names",
           "train_test_files"]

MULAN_COMMIT = "43f6389095ad71984264db4387a8074b22bc7d4a"
MEKA_COMMIT = "f9ffe231e06ebaa75b4a95c5cdeb737419731621"
MULAN_BASE = f"https://raw.githubusercontent.com/tsoumakas/mulan/{MULAN_COMMIT}/data/multi-label/"
MEKA_BASE = f"https://raw.githubusercontent.com/Waikato/meka/{MEKA_COMMIT}/src/main/data/"


@dataclass(frozen=True)
class DatasetFile:
    """One file of a dataset: its mirror/cache path, upstream URL, SHA-256 and size in bytes
    (None: unknown)."""

    path: str
    url: str | None
    sha256: str | None
    size: int | None = None


@dataclass(frozen=True)
class DatasetInfo:
    """A registry entry.

    ``data`` lists the ARFF files read for the whole dataset (several files are stacked
    in order, e.g. scene's train + test); ``labels`` the Mulan XML, if any.
    """

    name: str
    features: int
    instances: int
    labels: int
    cardinality: float | None
    format: str  # "mulan" or "meka"
    source: str
    size: str
    files: tuple[DatasetFile, ...]
    data: tuple[str, ...]
    label_file: str | None = None
    note: str = ""
    aliases: tuple[str, ...] = field(default=())

    @property
    def verified(self) -> bool:
        """Whether every file has a known checksum."""
        return all(f.sha256 for f in self.files)


_SHA = {
    "meka/Enron.arff.bz2": "d8e629fd9cfce500845fbfe80aeba9e73572b877e42b919d9347858c57dcbdd8",
    "meka/Music.arff": "276be786e33b2ec11b91147483aa5758d8df6eb8b55f8ac82e5e0b231f0270b5",
    "meka/Scene.arff.bz2": "f560b40697d89803a6d260aa737e0879cf3699abb9a761f7cd3deab5c2a6d0a6",
    "meka/Yeast.arff.bz2": "98da124ba009c4ee2f8323076d6ec13442e6eaedc66314e88f289375d3ef5ab5",
    "mulan/bibtex/bibtex-test.arff": "9b03329cde64d3f994bdf7fbbac3f3b10fe185c311cb9ae725475f59c7f3f922",
    "mulan/bibtex/bibtex-train.arff": "8dcc9de6e0b2cebaec8c1f4fac78431adeeb73cfd3ab879b530a66d366e59174",
    "mulan/bibtex/bibtex.arff": "a282a6d1fb3cdaf39bde3f81cd4e6079850a7a538a6bc44f8b4ed95dfe1e5014",
    "mulan/bibtex/bibtex.xml": "08fe20013c1e75dcf1888c185f5187c95e76495b8518ce289b4d3afce38d1232",
    "mulan/cal500/cal500.arff": "cfe6097ba5fd6e8584e54911ab9783dcab34e898446b7c9370c71d477eae56d3",
    "mulan/cal500/cal500.xml": "877e128531268d7661faa3e44f7bb43cbcda829c0895e49879168775b192728c",
    "mulan/corel5k/Corel5k-sparse.arff": "12c06161d2367f919f6da912089a6c9180c115cfcefa37afacfdeb903930eb7e",
    "mulan/corel5k/Corel5k-test-sparse.arff": "e8f8e9cd052c43ba7bdfdf99d242f461fc8c2a03163466d921e576887b51d8a7",
    "mulan/corel5k/Corel5k-test.arff": "1907f52eb64cac755e24265990c6674ca209ebd868a967d9d0a36ef42e888cac",
    "mulan/corel5k/Corel5k-train-sparse.arff": "19eb253c447144bea74ffa86b4731a56022addae2ba7d0aab72ad07fdc02e9b3",
    "mulan/corel5k/Corel5k.xml": "54ef6a6ccb7ca9b77524052b34b306d5d501661a5609b9d1cc7085b2b597679d",
    "mulan/delicious/delicious-test.arff": "2dfb01723a819914b0ca83361177ed413ce3f2169851d9f228d4692915d63944",
    "mulan/delicious/delicious-train.arff": "030186cdb542ebdd32052fcdbb1ebe30115b3a22518c1b4b198c45eb827aebe1",
    "mulan/delicious/delicious.arff": "b944de0bca910050c11d97eed57d17b073110ea3646a587f3d15d127cf581aab",
    "mulan/delicious/delicious.xml": "4e0c0f93c7d86a39b9fca4aaefaa00e9428f2c80277732dfbf03ca48e2c14da2",
    "mulan/emotions/emotions-test.arff": "f13d4b746b7b5c8eb484bd751d6ac463d4560dff998a93516a5c1fe35daf6c8f",
    "mulan/emotions/emotions-train.arff": "bbe704106c79bb8fb99c1d1d2e9bde081d6a2daeb01f100862f11fd91a3c1f98",
    "mulan/emotions/emotions.arff": "6f2f790047073d1293ac0872c0d55f2dc98b6177802fc96c6b66b309dfee1e4b",
    "mulan/emotions/emotions.xml": "dbce8e6ccbbb2fcbfd9e9edbb230d7ed12692c6e13f59fdbc0161fa9b6cf2dc0",
    "mulan/enron/enron-test.arff": "2f3aad54a8f54caaab4ab01246fe9dd385ba944a2633028f52747b57eac5474e",
    "mulan/enron/enron-train.arff": "2988cefc1cdf7a8004a20ef84615cc8fa1b5d7434c16687283b41454e2d9d194",
    "mulan/enron/enron.arff": "d0889ef0576d4e7b5ec0df3b3e4760e476ac11a6e7d7ddeee4c4a34470dedf97",
    "mulan/enron/enron.xml": "ed40c92d7f613eed51714912cab10dddc4ce456262137d8fef230d44c7f4457b",
    "mulan/genbase/genbase-test.arff": "0e988520bedab39aa3f23f08f646c769bcdb6f9119ee298fd92b37127b226a36",
    "mulan/genbase/genbase-train.arff": "37670db2c2b308a1c163d05501819526f1d65d659638ddfb76812d4ce384b5c6",
    "mulan/genbase/genbase.arff": "cb23052a49191e36e9a59cd661e97d79bed2e3f2583030a206692b57bf1e3671",
    "mulan/genbase/genbase.xml": "198e8a1d7070e9603119e02e626cedc589db7577339b307b06f5192047b69eb9",
    "mulan/medical/medical-test.arff": "6be472e75a6c0b0916187f343a398011b1b26f8f0ddc682c575312ad3532f6c4",
    "mulan/medical/medical-train.arff": "c764f45756ab1c553b8b4eaaf5605a5610a43bbbcf37492d0f1a12bf9c9e2244",
    "mulan/medical/medical.arff": "ad0630a9a409ed0023c3bb56a0be7610b635c1ca185c6035e3b198b01167aac4",
    "mulan/medical/medical.xml": "51fa9d5c09e48caff3f0a0c75db1c9aa85944f8e35451f3ad8bd56fc422286ce",
    "mulan/scene/scene-test.arff": "ea38d20296b3ff7e220f477a3b802a9bcb2d768881fe6ee163efbc97ea527a42",
    "mulan/scene/scene-train.arff": "b53ba93bdf412de922e3960389bcee24744fa3e872ce610511fc1d750888b64d",
    "mulan/scene/scene.xml": "55d8b247b949ad5c52e5a73d8c6775ec6e5469ce9682465b45b333b68ee4bcc5",
    "mulan/tmc2007-500/tmc2007-500-test.arff": "b24f9c3f1eba77c9da0bbaff093ba41d331b7351be0167a8e1e3852c62e25e38",
    "mulan/tmc2007-500/tmc2007-500-train.arff": "edfe7b7615c6f80e54c92a214437610d1ae36560c5cc6c4253b51c434d258273",
    "mulan/tmc2007-500/tmc2007-500.arff": "3ea7e95dd80a78a3e7d521d77c3371bfef888da1d364b5a3bb71c7222ad7f013",
    "mulan/tmc2007-500/tmc2007-500.xml": "cb6a67c8ae72fd9b47d89f77aa5b7f6cafb4ba9c20b1124c65a95a3f2caec38d",
    "mulan/yeast/yeast-test.arff": "4aaac102bff9669a765bf0b378602e5cc8c3b181048282e2f003117b496d552a",
    "mulan/yeast/yeast-train.arff": "e759dc991ff54694a4ff9c4314f3be0d6fd2b1994a4b563f57e416394c6aebbd",
    "mulan/yeast/yeast.arff": "55c07a3b6ff885ae338fb6987a1d57f55572b29809922c2822c4885c61230dd7",
    "mulan/yeast/yeast.xml": "c3056cc26444b5158b1588d1b73bec9c45429e10f0957ad085903423cb81f247",
    "rcv1v2/rcv1subset1.arff.gz": "9240d4f4c6484830514b1e5e3465252c72dba9ab8c063533c853e046c3f05aa1",
    "rcv1v2/rcv1subset1.xml": "e1028f4f10b8974d8881c30eb6e7f231ba248154999c85b8d7d95e18e10b2480",
}


# Byte sizes of the same files: a download is cut off as soon as it exceeds the size (an endless
# or wrong response never fills the disk).
_SIZE = {
    "meka/Enron.arff.bz2": 75940,
    "meka/Music.arff": 382468,
    "meka/Scene.arff.bz2": 1999024,
    "meka/Yeast.arff.bz2": 703814,
    "mulan/bibtex/bibtex-test.arff": 1215637,
    "mulan/bibtex/bibtex-train.arff": 2292961,
    "mulan/bibtex/bibtex.arff": 3457832,
    "mulan/bibtex/bibtex.xml": 5880,
    "mulan/cal500/cal500.arff": 492857,
    "mulan/cal500/cal500.xml": 7901,
    "mulan/corel5k/Corel5k-sparse.arff": 377579,
    "mulan/corel5k/Corel5k-test-sparse.arff": 60876,
    "mulan/corel5k/Corel5k-test.arff": 895771,
    "mulan/corel5k/Corel5k-train-sparse.arff": 339535,
    "mulan/corel5k/Corel5k.xml": 11222,
    "mulan/delicious/delicious-test.arff": 757565,
    "mulan/delicious/delicious-train.arff": 3056590,
    "mulan/delicious/delicious.arff": 3773732,
    "mulan/delicious/delicious.xml": 34303,
    "mulan/emotions/emotions-test.arff": 132007,
    "mulan/emotions/emotions-train.arff": 252080,
    "mulan/emotions/emotions.arff": 380476,
    "mulan/emotions/emotions.xml": 323,
    "mulan/enron/enron-test.arff": 324140,
    "mulan/enron/enron-train.arff": 607799,
    "mulan/enron/enron.arff": 906705,
    "mulan/enron/enron.xml": 1604,
    "mulan/genbase/genbase-test.arff": 758739,
    "mulan/genbase/genbase-train.arff": 1714007,
    "mulan/genbase/genbase.arff": 3238276,
    "mulan/genbase/genbase.xml": 992,
    "mulan/medical/medical-test.arff": 99124,
    "mulan/medical/medical-train.arff": 69680,
    "mulan/medical/medical.arff": 129626,
    "mulan/medical/medical.xml": 1818,
    "mulan/scene/scene-test.arff": 3090742,
    "mulan/scene/scene-train.arff": 3127968,
    "mulan/scene/scene.xml": 285,
    "mulan/tmc2007-500/tmc2007-500-test.arff": 1054414,
    "mulan/tmc2007-500/tmc2007-500-train.arff": 3152791,
    "mulan/tmc2007-500/tmc2007-500.arff": 4193699,
    "mulan/tmc2007-500/tmc2007-500.xml": 783,
    "mulan/yeast/yeast-test.arff": 918515,
    "mulan/yeast/yeast-train.arff": 1501117,
    "mulan/yeast/yeast.arff": 2416688,
    "mulan/yeast/yeast.xml": 526,
    "rcv1v2/rcv1subset1.arff.gz": 2825695,
    "rcv1v2/rcv1subset1.xml": 3226,
}

def _file(path: str) -> DatasetFile:
    """A file with its upstream URL derived from the mirror path."""
    top, _, rest = path.partition("/")
    if top == "mulan":
        folder, _, fname = rest.partition("/")
        upstream_folder = "tmc2007" if folder.startswith("tmc2007") else folder
        url: str | None = MULAN_BASE + f"{upstream_folder}/{fname}"
    elif top == "meka":
        url = MEKA_BASE + rest
    else:
        url = None  # converted files (rcv1v2) exist only on mirrors
    return DatasetFile(path=path, url=url, sha256=_SHA.get(path), size=_SIZE.get(path))


def _mulan(name, folder, stem, F, N, L, card, size, *, data=None, xml=None, extra=(), note="", aliases=()):
    data = tuple(f"mulan/{folder}/{d}" for d in (data or (f"{stem}.arff",)))
    xml = f"mulan/{folder}/{xml or stem + '.xml'}"
    paths = list(dict.fromkeys([*data, xml, *(f"mulan/{folder}/{e}" for e in extra)]))
    return DatasetInfo(
        name=name, features=F, instances=N, labels=L, cardinality=card, format="mulan",
        source=f"Mulan (tsoumakas/mulan data/multi-label/{folder.replace('tmc2007-500', 'tmc2007')})",
        size=size, files=tuple(_file(p) for p in paths), data=data, label_file=xml, note=note, aliases=aliases,
    )


def _rcv1(i: int, card: float) -> DatasetInfo:
    paths = (f"rcv1v2/rcv1subset{i}.arff.gz", f"rcv1v2/rcv1subset{i}.xml")
    return DatasetInfo(
        name=f"rcv1subset{i}", features=47236, instances=6000, labels=101, cardinality=card, format="mulan",
        source=f"mldr.datasets additional-data/rcv1sub{i}.rda, converted to sparse ARFF (mirror only)",
        size="2.8 MB gz / 8.3 MB", files=tuple(_file(p) for p in paths), data=(paths[0],), label_file=paths[1],
        aliases=(f"rcv1v2-subset{i}", f"rcv1sub{i}"),
    )


def _meka(name, fname, F, N, L, card, size, note="") -> DatasetInfo:
    path = f"meka/{fname}"
    return DatasetInfo(
        name=name, features=F, instances=N, labels=L, cardinality=card, format="meka",
        source=f"MEKA (Waikato/meka src/main/data/{fname})", size=size, files=(_file(path),), data=(path,),
        note=note,
    )


def _remote(name, folder, stem, F, N, L, card, size, files, data, xml, note) -> DatasetInfo:
    paths = [f"mulan/{folder}/{p}" for p in files]
    return DatasetInfo(
        name=name, features=F, instances=N, labels=L, cardinality=card, format="mulan",
        source=f"Mulan ({folder})", size=size, files=tuple(_file(p) for p in paths),
        data=tuple(f"mulan/{folder}/{d}" for d in data), label_file=f"mulan/{folder}/{xml}", note=note,
    )


_UNVERIFIED = "no checksum known (not in the reference copy): fetch needs --no-verify"

_ENTRIES: list[DatasetInfo] = [
    _mulan("emotions", "emotions", "emotions", 72, 593, 6, 1.8685, "380 KB",
           extra=("emotions-train.arff", "emotions-test.arff")),
    _mulan("scene", "scene", "scene", 294, 2407, 6, 1.074, "6.2 MB",
           data=("scene-train.arff", "scene-test.arff"), note="train + test stacked (no union file upstream)"),
    _mulan("yeast", "yeast", "yeast", 103, 2417, 14, 4.237, "2.4 MB", extra=("yeast-train.arff", "yeast-test.arff")),
    # Named as their papers (and Mulan) write them; every name is matched in any case.
    _mulan("CAL500", "cal500", "cal500", 68, 502, 174, 26.044, "493 KB"),
    _mulan("Corel5k", "corel5k", "Corel5k", 499, 5000, 374, 3.522, "378 KB", data=("Corel5k-sparse.arff",),
           extra=("Corel5k-train-sparse.arff", "Corel5k-test-sparse.arff")),
    _mulan("delicious", "delicious", "delicious", 500, 16105, 983, 19.020, "3.8 MB",
           extra=("delicious-train.arff", "delicious-test.arff")),
    _mulan("enron", "enron", "enron", 1001, 1702, 53, 3.378, "907 KB", extra=("enron-train.arff", "enron-test.arff")),
    _mulan("medical", "medical", "medical", 1449, 978, 45, 1.245, "130 KB",
           extra=("medical-train.arff", "medical-test.arff")),
    _mulan("genbase", "genbase", "genbase", 1186, 662, 27, 1.252, "3.2 MB",
           extra=("genbase-train.arff", "genbase-test.arff"), note="feature 0 'protein' is an ID"),
    _mulan("bibtex", "bibtex", "bibtex", 1836, 7395, 159, 2.402, "3.5 MB",
           extra=("bibtex-train.arff", "bibtex-test.arff")),
    _mulan("tmc2007-500", "tmc2007-500", "tmc2007-500", 500, 28596, 22, 2.158, "4.2 MB",
           extra=("tmc2007-500-train.arff", "tmc2007-500-test.arff")),
    _rcv1(1, 2.880),
    # Counts of subsets 2-5 from Mulan's statistics table (not checked against files here).
    _rcv1(2, 2.634),
    _rcv1(3, 2.614),
    _rcv1(4, 2.484),
    _rcv1(5, 2.642),
    _remote("tmc2007", "tmc2007", "tmc2007", 49060, 28596, 22, 2.158, "≈ 40 MB",
            ("tmc2007.arff", "tmc2007.xml"), ("tmc2007.arff",), "tmc2007.xml", _UNVERIFIED),
    _remote("mediamill", "mediamill", "mediamill", 120, 43907, 101, 4.376, "≈ 30 MB",
            ("mediamill.arff", "mediamill.xml"), ("mediamill.arff",), "mediamill.xml", _UNVERIFIED),
    _remote("eurlex-ev", "eurlex", "eurlex-ev", 5000, 19348, 3993, 5.310, "≈ 60 MB",
            ("eurlex-ev.arff", "eurlex-ev.xml"), ("eurlex-ev.arff",), "eurlex-ev.xml", _UNVERIFIED),
    _remote("bookmarks", "bookmarks", "bookmarks", 2150, 87856, 208, 2.028, "≈ 50 MB",
            ("bookmarks.arff", "bookmarks.xml"), ("bookmarks.arff",), "bookmarks.xml", _UNVERIFIED),
    _meka("scene-meka", "Scene.arff.bz2", 294, 2407, 6, 1.074, "2.0 MB bz2"),
    _meka("yeast-meka", "Yeast.arff.bz2", 103, 2417, 14, 4.237, "704 KB bz2", note="rows reordered vs Mulan yeast"),
    _meka("enron-meka", "Enron.arff.bz2", 1001, 1702, 53, 3.378, "76 KB bz2", note="features numeric"),
    _meka("music", "Music.arff", 71, 592, 6, 1.870, "382 KB", note="normalised; not identical to emotions"),
]

REGISTRY: dict[str, DatasetInfo] = {e.name: e for e in _ENTRIES}
_LOOKUP: dict[str, str] = {}
for _e in _ENTRIES:
    for _n in (_e.name, *_e.aliases):
        _LOOKUP[_n.lower()] = _e.name


def names() -> list[str]:
    """Registry names, in listing order."""
    return list(REGISTRY)


def find(name: str) -> DatasetInfo | None:
    """The entry for a name or alias (case-insensitive), or None."""
    key = _LOOKUP.get(str(name).lower())
    return REGISTRY[key] if key else None


def close_names(name: str, n: int = 4) -> list[str]:
    """Registry names (as ``datasets list`` shows them) that look like ``name``.

    Aliases are matched too, but reported under the dataset's listed name.
    """
    matches = difflib.get_close_matches(str(name).lower(), list(_LOOKUP), n=3 * n, cutoff=0.5)
    return list(dict.fromkeys(_LOOKUP[m] for m in matches))[:n]


def find_file(path: str) -> tuple[DatasetInfo, DatasetFile] | None:
    """The entry and file for a registry file path (``"rcv1v2/rcv1subset1.arff.gz"``), or None.

    Data files are preferred over the label file when several entries share a file.
    """
    text = str(path).replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    hit = None
    for info in _ENTRIES:
        for f in info.files:
            if f.path == text:
                if text in info.data:
                    return info, f
                hit = hit or (info, f)
    return hit


def get(name: str) -> DatasetInfo:
    """The entry for ``name``; DatasetError naming close matches when unknown."""
    info = find(name)
    if info is None:
        close = close_names(name)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `coreselect datasets list` shows them"
        raise DatasetError(f"unknown dataset {name!r}{hint}")
    return info


def train_test_files(info: DatasetInfo) -> tuple[str, str] | None:
    """Mulan's own train/test split of a dataset (``mulan/emotions/emotions-train.arff``,
    ``...-test.arff``; the sparse pair where that is all there is), or None when it has none."""
    paths = [f.path for f in info.files]
    for suffix in ("", "-sparse"):
        train = [p for p in paths if p.endswith(f"-train{suffix}.arff")]
        test = [p for p in paths if p.endswith(f"-test{suffix}.arff")]
        if train and test:
            return train[0], test[0]
    return None
