#!/usr/bin/perl
# Dump a Perl script's PPI document as JSON for `perlcompat port` (perlcompat/tools/port/ppi.py).
# Usage: perl ppi_dump.pl SCRIPT   (the script's bytes are parsed as they are: any encoding)
# Each node: c (class, without "PPI::"), l (line), t (a token's text), k (children; no
# whitespace), and per class: o/e (a structure's brackets), sym (a symbol's real name),
# s (a quote's inner string), m/r/f (a regexp's match, replacement, flags), hd (a here-doc's
# lines), w (qw's words), own (a comment on its own line), name (a sub's name), type.
use strict;
use warnings;
use PPI;
use JSON::PP;

my $path = shift @ARGV or die "usage: ppi_dump.pl SCRIPT\n";
open(my $fh, '<:raw', $path) or die "cannot read $path: $!\n";
my $text = do { local $/; <$fh> };
close($fh);
my $doc = PPI::Document->new(\$text) or die "PPI cannot parse $path: " . PPI::Document->errstr . "\n";

sub node {
    my ($n) = @_;
    my $class = ref($n);
    $class =~ s/^PPI:://;
    my %out = (c => $class);
    my $loc = $n->location;
    $out{l} = $loc ? $loc->[0] : 0;
    if ($n->isa('PPI::Token')) {
        $out{t} = $n->content;
        if ($n->isa('PPI::Token::Symbol')) {
            $out{sym} = $n->symbol;
        } elsif ($n->isa('PPI::Token::HereDoc')) {
            $out{hd} = [ $n->heredoc ];
            $out{term} = $n->terminator;
        } elsif ($n->isa('PPI::Token::QuoteLike::Words')) {
            $out{w} = [ $n->literal ];
        } elsif ($n->isa('PPI::Token::Quote')) {
            $out{s} = $n->string;
        } elsif ($n->isa('PPI::Token::QuoteLike')) {
            my $s = $n->content;
            $out{s} = $n->can('string') ? $n->string : $s;
        } elsif ($n->isa('PPI::Token::Regexp')) {
            $out{m} = $n->get_match_string;
            $out{r} = $n->get_substitute_string if $n->isa('PPI::Token::Regexp::Substitute')
                or $n->isa('PPI::Token::Regexp::Transliterate');
            my %mods = $n->get_modifiers;
            $out{f} = join('', sort keys %mods);
            my @d = $n->get_delimiters;
            $out{d} = \@d;
        } elsif ($n->isa('PPI::Token::Comment')) {
            $out{own} = $n->line ? JSON::PP::true : JSON::PP::false;
        }
        return \%out;
    }
    if ($n->isa('PPI::Structure')) {
        $out{o} = $n->start ? $n->start->content : '';
        $out{e} = $n->finish ? $n->finish->content : '';
    }
    if ($n->isa('PPI::Statement::Sub')) {
        $out{name} = $n->name;
    }
    if ($n->isa('PPI::Statement::Compound') || $n->isa('PPI::Statement::Variable')
        || $n->isa('PPI::Statement::Include')) {
        $out{type} = $n->type;
    }
    my @kids;
    for my $k ($n->children) {
        next if $k->isa('PPI::Token::Whitespace');
        push @kids, node($k);
    }
    $out{k} = \@kids;
    return \%out;
}

binmode(STDOUT);
print JSON::PP->new->ascii->encode(node($doc)), "\n";
