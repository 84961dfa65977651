#!/usr/bin/perl
# Other XML-RPC clients than Python's against a real funcd (mutual TLS) and
# certmaster: Perl's RPC::XML and Frontier::RPC, as Debian packages them.
# Usage: compat.pl MINION_URL CA CERT KEY OTHER_CERT OTHER_KEY CERTMASTER_URL CSR_FILE MINION_NAME
# (the minion's certificate is checked against MINION_NAME: the URL is an
# address, and no minion is named by an IP address)
# Prints one "ok"/"not ok" line per check and "N passed, N failed"; exits 1 on any failure.
use strict;
use warnings;
use RPC::XML;
use RPC::XML::Client;
use Frontier::Client;

my ($url, $ca, $cert, $key, $other_cert, $other_key, $cm_url, $csr_file, $name) = @ARGV;
my ($passed, $failed) = (0, 0);
sub check {
    my ($ok, $name, $got) = @_;
    if ($ok) { $passed++; print "ok - $name\n"; }
    else { $failed++; print "not ok - $name" . (defined $got ? " (got: $got)" : "") . "\n"; }
}
sub ssl { my ($c, $k) = @_; return (ssl_opts => {SSL_ca_file => $ca, SSL_cert_file => $c, SSL_key_file => $k, verify_hostname => 1, SSL_verifycn_name => $name}); }

# --- RPC::XML ---------------------------------------------------------------
$RPC::XML::ENCODING = 'utf-8';
$RPC::XML::ALLOW_NIL = 1;
my $rx = RPC::XML::Client->new($url, useragent => [ssl($cert, $key), timeout => 30]);
sub rx { my $r = $rx->simple_request(@_); return defined $r ? $r : "ERROR: $RPC::XML::ERROR"; }
check(rx('test.ping') == 1, 'RPC::XML test.ping');
check(rx('test.add', RPC::XML::int->new(1), RPC::XML::int->new(5)) == 6, 'RPC::XML test.add');
my %echo = (
    int => RPC::XML::int->new(-7),
    i8 => RPC::XML::i8->new(1 << 40),
    double => RPC::XML::double->new(1.5),
    boolean => RPC::XML::boolean->new(1),
    string => RPC::XML::string->new("caf\x{e9} <&>"),
);
for my $type (sort keys %echo) {
    my $got = rx('test.echo', $echo{$type});
    my $want = $echo{$type}->value;
    my $ok = (!defined $want && !defined $got) || (defined $got && defined $want && $got eq $want);
    check($ok, "RPC::XML echo $type", $got);
}
my $nil = $rx->send_request('test.echo', RPC::XML::nil->new());
check(ref $nil eq 'RPC::XML::nil', 'RPC::XML echo nil', ref $nil || $nil);
my $b64 = rx('test.echo', RPC::XML::base64->new("\x00\xff binary"));
check($b64 eq "\x00\xff binary", 'RPC::XML echo base64');
my $sent = RPC::XML::time2iso8601(1704455940);
my $when = rx('test.echo', RPC::XML::datetime_iso8601->new($sent));
check($when eq $sent, "RPC::XML echo dateTime ($sent) unchanged", $when);
my $list = rx('test.echo', [1, "two", [3]]);
check(ref $list eq 'ARRAY' && $list->[1] eq 'two' && $list->[2][0] == 3, 'RPC::XML echo array');
my $struct = rx('test.echo', {a => 1, b => {c => "d"}});
check(ref $struct eq 'HASH' && $struct->{b}{c} eq 'd', 'RPC::XML echo struct');
my $err = rx('test.explode');
check(ref $err eq 'ARRAY' && $err->[0] eq 'REMOTE_ERROR' && $err->[1] eq 'exceptions.Exception', 'RPC::XML REMOTE_ERROR value');
my $other = RPC::XML::Client->new($url, useragent => [ssl($other_cert, $other_key), timeout => 30]);
my $denied = $other->send_request('command.run', 'true');
check(ref $denied && $denied->is_fault && $denied->code == 1, 'RPC::XML ACL denial is fault 1', ref $denied ? $denied->string : $denied);
my $job = rx('async.test.sleep', RPC::XML::int->new(1));
check($job =~ /^\d+(\.\d+)?-minion$/, 'RPC::XML async.test.sleep gives a job id', $job);
my $status = [0];
for (1 .. 300) { $status = rx('jobs.job_status', $job); last if ref $status eq 'ARRAY' && $status->[0] != 0; select(undef, undef, undef, 0.05); }
check(ref $status eq 'ARRAY' && $status->[0] == 1, 'RPC::XML jobs.job_status reaches finished', ref $status ? "@$status" : $status);
# RPC::XML's default: declares us-ascii and writes UTF-8 bytes. What was
# sent must arrive: strings, struct keys, and the command command.run runs.
{
    use utf8;
    local $RPC::XML::ENCODING = 'us-ascii';
    my $text = "café ✓ Ωμέγα";
    my $got = rx('test.echo', RPC::XML::string->new($text));
    check($got eq $text, 'RPC::XML (us-ascii) echo non-ASCII string', $got);
    my $keys = rx('test.echo', {"clé ✓" => "välue", "ascii" => "ünïcode"});
    check(ref $keys eq 'HASH' && join(',', sort keys %$keys) eq "ascii,clé ✓" && $keys->{"clé ✓"} eq "välue",
        'RPC::XML (us-ascii) echo non-ASCII struct keys', ref $keys ? join(',', %$keys) : $keys);
    my $ran = rx('command.run', "printf '%s' 'café ✓'");
    check(ref $ran eq 'ARRAY' && $ran->[0] == 0 && $ran->[1] eq "café ✓",
        'RPC::XML (us-ascii) command.run runs the command sent', ref $ran ? "@$ran" : $ran);
}
if ($cm_url) {
    open(my $fh, '<', $csr_file) or die "csr: $!";
    my $csr = do { local $/; <$fh> };
    my $cm = RPC::XML::Client->new($cm_url);
    my $signed = $cm->simple_request('wait_for_cert', $csr);
    check(ref $signed eq 'ARRAY' && $signed->[0] && $signed->[1] =~ /BEGIN CERTIFICATE/, 'RPC::XML certmaster wait_for_cert', defined $signed ? $signed : $RPC::XML::ERROR);
}

# --- Frontier::RPC (declares ISO-8859-1 and writes Latin-1) ----------------
my $fr = Frontier::Client->new(url => $url, encoding => 'ISO-8859-1');
$fr->{ua}->ssl_opts(SSL_ca_file => $ca, SSL_cert_file => $cert, SSL_key_file => $key, verify_hostname => 1, SSL_verifycn_name => $name);
my $fping = eval { $fr->call('test.ping') };
check(defined $fping && $fping == 1, 'Frontier test.ping', $@);
my $fadd = eval { $fr->call('test.add', $fr->int(2), $fr->int(3)) };
check(defined $fadd && $fadd == 5, 'Frontier test.add', $@);
my $latin = eval { $fr->call('test.echo', $fr->string("caf\xe9")) };
check(defined $latin && $latin eq "caf\xe9", 'Frontier echo Latin-1 string', $@ || $latin);
# Frontier writes every whole number as <int>; it cannot read <i8> answers,
# so the sum of two wide ints comes back small.
my $wide = eval { $fr->call('test.add', $fr->int(4294967296), $fr->int(-4294967295)) };
check(defined $wide && $wide == 1, 'Frontier <int> beyond 32 bits', $@ || $wide);
# ... and a wide integer it sent as <int> comes back as <int>, readable.
my $wecho = eval { $fr->call('test.echo', $fr->int(4294967296)) };
check(defined $wecho && $wecho == 4294967296, 'Frontier wide <int> echoed as <int>', $@ || $wecho);
my $ferr = eval { $fr->call('test.explode') };
check(ref $ferr eq 'ARRAY' && $ferr->[0] eq 'REMOTE_ERROR', 'Frontier REMOTE_ERROR value', $@);

print "perl: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
