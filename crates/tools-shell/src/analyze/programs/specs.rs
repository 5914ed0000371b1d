//! Option tables, read from the programs' own `--help` (GNU coreutils 9, util-linux 2.38, GNU
//! sed 4.9, GNU tar 1.34) and checked by hand where the help text is ambiguous: which short
//! letters and long names exist, and which take a value. See [`Spec`] for the notation.

use super::getopt::Spec;

pub(crate) const LS: Spec = Spec::new(
    "1ABCDFGHI:LNQRST:UXZabcdfghiklmnop:qrstuvw:x",
    "all almost-all author block-size= classify? color? context dereference dereference-command-line dereference-command-line-symlink-to-dir directory dired escape file-type format= full-time group-directories-first help hide= hide-control-chars human-readable hyperlink? ignore= ignore-backups indicator-style= inode kibibytes literal no-group numeric-uid-gid quote-name quoting-style= recursive reverse show-control-chars si size sort= tabsize= time= time-style= version width= zero",
);

pub(crate) const CAT: Spec = Spec::new(
    "AETbenstuv",
    "help number number-nonblank show-all show-ends show-nonprinting show-tabs squeeze-blank version",
);

pub(crate) const HEAD: Spec = Spec::new(
    "c:n:qvz#",
    "bytes= help lines= quiet silent verbose version zero-terminated",
);

pub(crate) const TAIL: Spec = Spec::new(
    "c:Ffn:qs:vz#",
    "bytes= follow? help lines= max-unchanged-stats= pid= quiet retry silent sleep-interval= verbose version zero-terminated",
);

pub(crate) const WC: Spec = Spec::new(
    "Lclmw",
    "bytes chars files0-from= help lines max-line-length version words",
);

pub(crate) const GREP: Spec = Spec::new(
    "A:B:C:D:EFGHILN:PRTUVZabcd:e:f:hilm:noqrsvwxz#",
    "after-context= basic-regexp before-context= binary binary-files= byte-offset color? colour? context= count dereference-recursive devices= directories= exclude= exclude-dir= exclude-from= extended-regexp file= files-with-matches files-without-match fixed-strings group-separator= help ignore-case include= initial-tab invert-match label= line-buffered line-number line-regexp max-count= no-filename no-group-separator no-ignore-case no-messages null null-data only-matching perl-regexp quiet recursive regexp= silent text version with-filename word-regexp",
);

pub(crate) const CUT: Spec = Spec::new(
    "Mb:c:d:f:nsz",
    "bytes= characters= complement delimiter= fields= help only-delimited output-delimiter= version zero-terminated",
);

pub(crate) const TR: Spec = Spec::new(
    "Ccdst",
    "complement delete help squeeze-repeats truncate-set1 version",
);

pub(crate) const DIFF: Spec = Spec::new(
    "BC:D:EF:I:NS:TU:W:X:Zabcdeilnpqrstuvwx:y",
    "GTYPE-group-format= LTYPE-line-format= brief color? context? ed exclude= exclude-from= expand-tabs from-file= help horizon-lines= ifdef= ignore-all-space ignore-blank-lines ignore-case ignore-file-name-case ignore-matching-lines= ignore-space-change ignore-tab-expansion ignore-trailing-space initial-tab label= left-column line-format= minimal new-file no-dereference no-ignore-file-name-case normal paginate palette= rcs recursive report-identical-files show-c-function show-function-line= side-by-side speed-large-files starting-file= strip-trailing-cr suppress-blank-empty suppress-common-lines tabsize= text to-file= unidirectional-new-file unified? version width=",
);

pub(crate) const CMP: Spec = Spec::new(
    "bi:ln:sv",
    "bytes= help ignore-initial= print-bytes quiet silent verbose version",
);

pub(crate) const COMM: Spec = Spec::new(
    "123z",
    "check-order help nocheck-order output-delimiter= total version zero-terminated",
);

pub(crate) const BASENAME: Spec = Spec::new("as:z", "help multiple suffix= version zero");

pub(crate) const DIRNAME: Spec = Spec::new("z", "help version zero");

pub(crate) const REALPATH: Spec = Spec::new(
    "LPemqsz",
    "canonicalize-existing canonicalize-missing help logical no-symlinks physical quiet relative-base= relative-to= strip version zero",
);

pub(crate) const READLINK: Spec = Spec::new(
    "efmnqsvz",
    "canonicalize canonicalize-existing canonicalize-missing help no-newline quiet silent verbose version zero",
);

pub(crate) const STAT: Spec = Spec::new(
    "c:fLt",
    "format= cached= dereference file-system help printf= terse version",
);

pub(crate) const DU: Spec = Spec::new(
    "0B:DHLPSX:abcd:hklmst:x",
    "all apparent-size block-size= bytes count-links dereference dereference-args exclude= exclude-from= files0-from= help human-readable inodes max-depth= no-dereference null one-file-system separate-dirs si summarize threshold= time= time-style= total version",
);

pub(crate) const DF: Spec = Spec::new(
    "B:HPTahiklt:vx:",
    "all block-size= exclude-type= help human-readable inodes local no-sync output? portability print-type si sync total type= version",
);

pub(crate) const NL: Spec = Spec::new(
    "b:d:f:h:i:l:n:ps:v:w:",
    "body-numbering= footer-numbering= header-numbering= help join-blank-lines= line-increment= no-renumber number-format= number-separator= number-width= section-delimiter= starting-line-number= version",
);

pub(crate) const FOLD: Spec = Spec::new("bsw:", "bytes help spaces version width=");

pub(crate) const FMT: Spec = Spec::new(
    "cg:p:stuw:",
    "crown-margin goal= help prefix= split-only tagged-paragraph uniform-spacing version width=",
);

pub(crate) const EXPAND: Spec = Spec::new("it:", "help initial tabs= version");

pub(crate) const UNEXPAND: Spec = Spec::new("at:", "all first-only help tabs= version");

pub(crate) const PASTE: Spec = Spec::new("d:sz", "delimiters= help serial version zero-terminated");

pub(crate) const JOIN: Spec = Spec::new(
    "1:2:a:e:ij:o:t:v:z",
    "check-order header help ignore-case nocheck-order version zero-terminated",
);

pub(crate) const TAC: Spec = Spec::new("brs:", "before help regex separator= version");

pub(crate) const SEQ: Spec = Spec::new("f:s:w", "equal-width format= help separator= version");

pub(crate) const PRINTENV: Spec = Spec::new("0", "help null version");

pub(crate) const BASE64: Spec = Spec::new("diw:", "decode help ignore-garbage version wrap=");

pub(crate) const BASE32: Spec = Spec::new("diw:", "decode help ignore-garbage version wrap=");

pub(crate) const OD: Spec = Spec::new(
    "A:N:S:abcdfij:lost:vw::x",
    "address-radix= endian= format= help output-duplicates read-bytes= skip-bytes= strings? traditional version width?",
);

pub(crate) const MD5SUM: Spec = Spec::new(
    "bctwz",
    "binary check help ignore-missing quiet status strict tag text version warn zero",
);

pub(crate) const SHA1SUM: Spec = Spec::new(
    "bctwz",
    "binary check help ignore-missing quiet status strict tag text version warn zero",
);

pub(crate) const SHA224SUM: Spec = Spec::new(
    "bctwz",
    "binary check help ignore-missing quiet status strict tag text version warn zero",
);

pub(crate) const SHA256SUM: Spec = Spec::new(
    "bctwz",
    "binary check help ignore-missing quiet status strict tag text version warn zero",
);

pub(crate) const SHA384SUM: Spec = Spec::new(
    "bctwz",
    "binary check help ignore-missing quiet status strict tag text version warn zero",
);

pub(crate) const SHA512SUM: Spec = Spec::new(
    "bctwz",
    "binary check help ignore-missing quiet status strict tag text version warn zero",
);

pub(crate) const B2SUM: Spec = Spec::new(
    "bcl:twz",
    "binary check help ignore-missing length= quiet status strict tag text version warn zero",
);

pub(crate) const CKSUM: Spec = Spec::new(
    "a:cl:wz",
    "algorithm= check debug help ignore-missing length= quiet status strict tag untagged version warn zero",
);

pub(crate) const SUM: Spec = Spec::new("rs", "help sysv version");

pub(crate) const UNAME: Spec = Spec::new(
    "aimnoprsv",
    "all hardware-platform help kernel-name kernel-release kernel-version machine nodename operating-system processor version",
);

pub(crate) const NPROC: Spec = Spec::new("", "all help ignore= version");

pub(crate) const UPTIME: Spec = Spec::new("Vhps", "help pretty since version");

pub(crate) const ID: Spec = Spec::new(
    "GZagnruz",
    "context group groups help name real user version zero",
);

pub(crate) const WHOAMI: Spec = Spec::new("", "help version");

pub(crate) const GROUPS: Spec = Spec::new("", "help version");

pub(crate) const TTY: Spec = Spec::new("s", "help quiet silent version");

pub(crate) const ARCH: Spec = Spec::new("", "help version");

pub(crate) const ZCAT: Spec = Spec::new(
    "S:flqrtv",
    "force help list quiet recursive suffix= synchronous test verbose version",
);

pub(crate) const STRINGS: Spec = Spec::new(
    "T:U:Vade:fhn:ot:ws:v#",
    "all bytes= data encoding= help include-all-whitespace output-separator= print-file-name radix= target= unicode= version",
);

pub(crate) const HEXDUMP: Spec = Spec::new(
    "CLVbcde:f:hn:os:vx",
    "canonical color? format= format-file= help length= no-squeezing one-byte-char one-byte-octal skip= two-bytes-decimal two-bytes-hex two-bytes-octal version",
);

pub(crate) const COLUMN: Spec = Spec::new(
    "E:H:JLN:O:R:T:VW:c:dehi:l:n:o:p:r:s:tx",
    "fillrows help json keep-empty-lines output-separator= output-width= separator= table table-columns= table-columns-limit= table-header-repeat table-hide= table-name= table-noextreme= table-noheadings table-order= table-right= table-truncate= table-wrap= tree= tree-id= tree-parent= version",
);

pub(crate) const REV: Spec = Spec::new("Vh", "help version");

pub(crate) const FILE: Spec = Spec::new(
    "0CF:LNP:Zbcde:f:hiklm:nprsvz",
    "apple brief checking-printout compile debug dereference exclude= exclude-quiet= extension files-from= help keep-going list magic-file= mime mime-encoding mime-type no-buffer no-dereference no-pad no-sandbox parameter= preserve-date print0 raw separator= special-files uncompress uncompress-noreport version",
);

pub(crate) const NUMFMT: Spec = Spec::new(
    "Md:z",
    "debug delimiter= field= format= from= from-unit= grouping header? help invalid= padding= round= suffix= to= to-unit= version zero-terminated",
);

pub(crate) const SORT: Spec = Spec::new(
    "CMRS:T:Vbcdfghik:mno:rst:uz",
    "batch-size= buffer-size= check? compress-program= debug dictionary-order field-separator= files0-from= general-numeric-sort help human-numeric-sort ignore-case ignore-leading-blanks ignore-nonprinting key= merge month-sort numeric-sort output= parallel= random-sort random-source= reverse sort= stable temporary-directory= unique version version-sort zero-terminated",
);

pub(crate) const UNIQ: Spec = Spec::new(
    "Dcdf:is:uw:z",
    "all-repeated? check-chars= count group? help ignore-case repeated skip-chars= skip-fields= unique version zero-terminated",
);

pub(crate) const TEE: Spec =
    Spec::new("aip", "append help ignore-interrupts output-error? version");

pub(crate) const TOUCH: Spec = Spec::new(
    "acd:fhmr:t:",
    "date= help no-create no-dereference reference= time= version",
);

pub(crate) const MKDIR: Spec = Spec::new("Zm:pv", "context? help mode= parents verbose version");

pub(crate) const CP: Spec = Spec::new(
    "HLPRS:TZabdfilnprst:uvx",
    "archive attributes-only backup? context? copy-contents dereference force help interactive link no-clobber no-dereference no-preserve= no-target-directory one-file-system parents preserve? recursive reflink? remove-destination sparse= strip-trailing-slashes suffix= symbolic-link target-directory= update verbose version",
);

pub(crate) const MV: Spec = Spec::new(
    "S:TZbfint:uv",
    "backup? context force help interactive no-clobber no-target-directory strip-trailing-slashes suffix= target-directory= update verbose version",
);

pub(crate) const LN: Spec = Spec::new(
    "FLPS:Tbdfinrst:v",
    "backup? directory force help interactive logical no-dereference no-target-directory physical relative suffix= symbolic target-directory= verbose version",
);

pub(crate) const RM: Spec = Spec::new(
    "IRdfirv",
    "dir force help interactive? no-preserve-root one-file-system preserve-root? recursive verbose version",
);

pub(crate) const RMDIR: Spec = Spec::new(
    "pv",
    "help ignore-fail-on-non-empty parents verbose version",
);

pub(crate) const INSTALL: Spec = Spec::new(
    "CDS:TZbcdg:m:o:pst:v",
    "backup? compare context? directory group= help mode= no-target-directory owner= preserve-context preserve-timestamps strip strip-program= suffix= target-directory= verbose version",
);

pub(crate) const TRUNCATE: Spec = Spec::new(
    "cor:s:",
    "help io-blocks no-create reference= size= version",
);

pub(crate) const CHMOD: Spec = Spec::new(
    "Rcfv",
    "changes help no-preserve-root preserve-root quiet recursive reference= silent verbose version",
);

pub(crate) const CHOWN: Spec = Spec::new(
    "HLPRcfhv",
    "changes dereference from= help no-dereference no-preserve-root preserve-root quiet recursive reference= silent verbose version",
);

pub(crate) const CHGRP: Spec = Spec::new(
    "HLPRcfhv",
    "changes dereference help no-dereference no-preserve-root preserve-root quiet recursive reference= silent verbose version",
);

pub(crate) const SED: Spec = Spec::new(
    "Ee:f:i::l:nrsuz",
    "debug expression= file= follow-symlinks help in-place? line-length= null-data posix quiet regexp-extended sandbox separate silent unbuffered version",
);

pub(crate) const TAR: Spec = Spec::new(
    "ABC:F:GH:I:JK:L:MN:OPRST:UV:WX:Zab:cdf:g:hijklmnoprstuvwxz",
    "absolute-names acls add-file= after-date= anchored append atime-preserve? auto-compress backup? block-number blocking-factor= bzip2 catenate check-device check-links checkpoint? checkpoint-action= clamp-mtime compare compress concatenate confirmation create delay-directory-restore delete dereference diff directory= exclude= exclude-backups exclude-caches exclude-caches-all exclude-caches-under exclude-from= exclude-ignore= exclude-ignore-recursive= exclude-tag= exclude-tag-all= exclude-tag-under= exclude-vcs exclude-vcs-ignores extract file= files-from= force-local format= full-time get group= group-map= gunzip gzip hard-dereference help hole-detection= ignore-case ignore-command-error ignore-failed-read ignore-zeros incremental index-file= info-script= interactive keep-directory-symlink keep-newer-files keep-old-files label= level= list listed-incremental= lzip lzma lzop mode= mtime= multi-volume new-volume-script= newer= newer-mtime= no-acls no-anchored no-auto-compress no-check-device no-delay-directory-restore no-ignore-case no-ignore-command-error no-null no-overwrite-dir no-quote-chars= no-recursion no-same-owner no-same-permissions no-seek no-selinux no-unquote no-verbatim-files-from no-wildcards no-wildcards-match-slash no-xattrs null numeric-owner occurrence? old-archive one-file-system one-top-level? overwrite overwrite-dir owner= owner-map= pax-option= portability posix preserve-order preserve-permissions quote-chars= quoting-style= read-full-records record-size= recursion recursive-unlink remove-files restrict rmt-command= rsh-command= same-order same-owner same-permissions seek selinux show-defaults show-omitted-dirs show-snapshot-field-ranges show-stored-names show-transformed-names skip-old-files sort= sparse sparse-version= starting-file= strip-components= suffix= tape-length= test-label to-command= to-stdout totals? touch transform= uncompress ungzip unlink-first unquote update usage use-compress-program= utc verbatim-files-from verbose verify version volno-file= warning= wildcards wildcards-match-slash xattrs xattrs-exclude= xattrs-include= xform= xz zstd",
);

pub(crate) const DATE: Spec = Spec::new(
    "I::Rd:f:r:s:u",
    "date= debug file= help iso-8601? reference= resolution rfc-3339= rfc-email set= universal utc version",
);

pub(crate) const FREE: Spec = Spec::new(
    "Vbc:ghklms:tvw",
    "bytes committed count= gibi giga help human kibi kilo lohi mebi mega pebi peta seconds= si tebi tera total version wide",
);

pub(crate) const LSBLK: Spec = Spec::new(
    "ADE:I:JMOPSTVabde:fhilmno:prstw:x:yz",
    "all ascii bytes dedup= discard exclude= fs help include= inverse json list merge nodeps noempty noheadings output= output-all pairs paths perms raw scsi shell sort= sysroot= topology tree? version width= zoned",
);

pub(crate) const PGREP: Spec = Spec::new(
    "AF:G:LO:P:U:Vacd:fg:hilnor:s:t:u:vwx",
    "cgroup= count delimiter= euid= exact full group= help ignore-ancestors ignore-case inverse lightweight list-full list-name logpidfile newest ns= nslist= older= oldest parent= pgroup= pidfile= runstates= session= terminal= uid= version",
);

pub(crate) const LSCPU: Spec = Spec::new(
    "BCJVabcehps:xy",
    "all bytes caches? extended? help hex json offline online output-all parse? physical sysroot= version",
);
