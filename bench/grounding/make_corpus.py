"""Writes the grounding corpus: bench/grounding/corpus/{questions.json, pages/*.html}.

Deterministic (every random choice comes from random.Random seeded with a fixed string per page) and
offline. The invented facts are in specs.py; this file turns each into three realistic pages:

  <id>-answer.html  the fact stated once, deep in the body: not in <title>, not in the meta
                    description, not in the search teaser, not in the first 1,000 characters of the
                    page's visible text (nor of the article's own text)
  <id>-d1.html, <id>-d2.html   distractors: same subject and words, a close but wrong figure or name
                    (its sentence is the distractor's `near_miss` in questions.json), no answer

Every page has what real pages have around the article: a cookie banner, a header with a <nav> menu,
breadcrumbs, a sidebar of links, a newsletter box and a footer with its own menu. Where the answer
sits in the article varies from question to question (DEPTHS), so a reader that cuts pages at N
characters can be judged by depth.

  .venv/bin/python bench/grounding/make_corpus.py          # rewrites corpus/
  .venv/bin/python bench/grounding/make_corpus.py --check  # verifies the committed corpus is what it writes
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import random
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from specs import EN, ZH  # noqa: E402

CORPUS = HERE / "corpus"
SEED = "searchhub-grounding-v1"
# Where the answer starts in the article's text (characters), cycled over the questions.
DEPTHS = [1100, 1500, 1900, 2300, 2800, 3300]
MIN_VISIBLE_OFFSET = 1000

# ----------------------------------------------------------------------------- filler sentences

EN_FILLER = {
    "place": [
        "{S} has long been part of everyday life in {P}, and most residents have a story or two about it.",
        "Guides in {P} like to point out how closely {K} and {S} are linked in local memory.",
        "Over the decades, arguments about {K} have shaped how people in {P} see {S}.",
        "A small exhibition at the {P} visitor centre covers {K}, with photographs and letters lent by local "
        "families.",
        "Anyone interested in {K} will find the archive in {P} surprisingly well organised.",
        "Some critics say that the attention paid to {S} overshadows other parts of the story, such as {K}.",
        "The council's most recent plan mentions {S} several times, mostly in connection with {K}.",
        "Many of the older accounts of {S} contradict each other, so they need to be read with care.",
        "In the summer months {P} receives more visitors than at any other time of year, and many of them "
        "come for {S}.",
        "Local schools teach a short unit on {K}, which usually ends with a visit to {S}.",
        "The debate about {K} comes back every few years, usually after a newspaper feature about {S}.",
        "Photographers prefer the early morning light, when the streets of {P} are still quiet.",
        "A volunteer group meets every month to record older residents' memories of {K}.",
        "Some of the surviving documents about {K} are in private hands and are rarely shown in public.",
        "Researchers who come to {P} often combine a study of {S} with fieldwork on {K}.",
        "The history society of {P} published a booklet on {K} that is still the standard introduction.",
        "Opinions differ on how much {K} changed once the new road reached {P}.",
        "Several guidebooks praise {S} warmly without giving many details about it.",
        "The annual open day is a rare chance for the public to learn about {K} at first hand.",
        "Ask older people in {P} about their town and they will usually mention {S} first.",
        "Access to {S} is free, although donations towards its upkeep are welcome.",
        "Signs near {S} explain the basics, but they say little about {K}.",
        "Local businesses in {P} depend more than they admit on the visitors drawn by {S}.",
        "Planning documents from the period show long discussions of {K} before any decision was taken.",
        "Maintenance of {S} is shared between the council and a trust set up by residents of {P}.",
        "Conservation officers have raised concerns about {K} in several recent reports.",
        "For most visitors, a short walk around {S} is enough, but the details of {K} reward a longer look.",
        "Residents of {P} were divided at the time, and letters to the local paper show how strong the "
        "feelings were.",
        "Weekend walking tours of {P} start at the market cross and end near {S}.",
        "Much of what is known about {K} comes from the diaries of a local clerk.",
    ],
    "product": [
        "{S} has attracted a lot of attention since {P} first showed it to the press.",
        "Reviewers have spent weeks testing {S}, looking mostly at {K}.",
        "{P} says that feedback from early customers shaped {K}.",
        "Compared with its predecessor, {S} is lighter and easier to live with from day to day.",
        "Several forums have long threads comparing {S} with rival models on {K}.",
        "Dealers report steady demand, although supplies of {S} have been uneven in some regions.",
        "The company's engineers say that {K} took the longest to get right.",
        "Owners generally praise {K}, while some complain about the accessories.",
        "Independent tests of {K} have given mixed results so far.",
        "{P} has promised software updates that should improve {K} over time.",
        "The service network of {P} is growing, but it still does not cover every city.",
        "Some early owners say the manual explains {K} too briefly.",
        "The packaging is mostly recycled cardboard, a detail {P} mentions in its advertising.",
        "A firmware update last spring changed the behaviour of {K} noticeably.",
        "Trade magazines named {S} one of the more interesting launches of its year.",
        "Rival firms have been quick to copy some of the ideas behind {K}.",
        "Warranty terms for {S} differ from country to country, so buyers should check the small print.",
        "The design team of {P} is small, and several of its members came from larger competitors.",
        "A long-term test by one magazine found {K} held up well after months of daily use.",
        "Early production units had a few quirks that {P} has since fixed.",
        "Second-hand prices for {S} have stayed relatively high, a sign of steady demand.",
        "The colour options of {S} were chosen after a survey of existing customers.",
        "Critics of {S} point to {K} as the area with most room for improvement.",
        "{P} runs a public beta programme where keen owners can try changes to {K} early.",
    ],
    "culture": [
        "{S} is still a regular topic of conversation in {P}.",
        "Scholars continue to disagree about {K}.",
        "Many memoirs that mention {S} also dwell on {K}.",
        "The local paper has run long features about {S} on several occasions.",
        "Anniversaries in {P} usually bring a lecture or two on {K}.",
        "Some of the early records have been lost, so the surviving accounts are incomplete.",
        "Critics argue that {K} is the key to understanding {S}.",
        "Interest in {S} among younger people has grown noticeably in recent years.",
        "The archive in {P} holds letters and photographs connected with {K}.",
        "Some commentators complain that coverage of {S} focuses too narrowly on {K}.",
        "Newcomers to the subject are usually pointed towards a short introduction to {K}.",
        "A documentary about {S} was shown on regional television, to mixed reviews.",
        "Several people involved in {S} have since written about {K} in their own words.",
        "Visitors to {P} can find a small display about {S} in the public library.",
        "Rumours about {K} have circulated for years, most of them impossible to check.",
        "The organisers in {P} keep careful records, although not all of them are public.",
        "A collection of essays on {S} appeared a few years ago and sold out quickly.",
        "Supporters say {S} has done more for {P} than any official campaign.",
        "Much of the early enthusiasm for {S} came from a small circle of friends in {P}.",
        "Journalists covering {S} tend to return to the same few anecdotes about {K}.",
        "The finances behind {K} have never been fully explained.",
        "Local historians in {P} have pieced together much of the background from parish papers.",
        "There is no single authoritative history of {S}, only a number of partial accounts.",
        "Photographs from the early years show how modest the beginnings of {K} were.",
    ],
}
EN_INTROS = {
    "place": ["{Sc} is one of the things people in {P} are proudest of, and it raises plenty of questions.",
              "This page brings together what is known about {S}, from its early days to the present.",
              "Few places in {P} draw as much interest as {S}.",
              "{Sc} remains a familiar sight for anyone who knows {P}.",
              "Here is our round-up of the story so far of {S} in {P}."],
    "product": ["{Sc} from {P} is one of the more talked-about launches in its category.",
                "We have been living with {S} for a while, and here is what stands out.",
                "{P} has high hopes for {S}, and the first impressions are mostly positive.",
                "Here is everything worth knowing about {S} before you buy."],
    "culture": ["{Sc} holds a special place in the story of {P}.",
                "Few subjects in {P} are discussed as often as {S}.",
                "This is a short account of {S}, pieced together from many sources.",
                "Interest in {S} has never quite gone away in {P}."],
}
EN_NUMERIC = [
    "A survey by volunteers counted {N} visitors over a single holiday weekend.",
    "The newsletter of the local society now reaches about {N} households.",
    "Last year {N} people took part in talks and guided tours on the subject.",
    "A fundraising appeal raised about {N} pounds in its first month.",
    "The online archive has been viewed more than {N} times since it opened.",
    "A petition on the subject gathered {N} signatures within a few weeks.",
]
EN_HEADINGS = ["Background", "A closer look", "What visitors should know", "Looking ahead", "Facts and figures",
               "In context", "The details", "Why it matters", "History", "Today"]

ZH_FILLER = {
    "place": [
        "{S}一直是{P}居民日常生活的一部分，几乎每个人都能讲出几段与它有关的故事。",
        "当地导游常常提到，{K}和{S}在{P}人的记忆中紧密相连。",
        "几十年来，围绕{K}的讨论深刻影响了人们对{S}的看法。",
        "{P}游客中心有一个小型展览，介绍{K}，展出了许多老照片和家书。",
        "对{K}感兴趣的人会发现，{P}档案馆的资料整理得相当完善。",
        "也有评论认为，人们对{S}的关注掩盖了{K}等其他方面。",
        "最新一版规划中多次提到{S}，大多与{K}有关。",
        "关于{S}的早期记载互相矛盾，因此需要仔细甄别。",
        "每到夏季，{P}的游客明显增多，其中不少人是冲着{S}来的。",
        "本地学校开设了关于{K}的短期课程，最后通常会组织学生参观{S}。",
        "每隔几年，关于{K}的争论就会重新出现，往往是因为报纸又刊登了一篇关于{S}的专题。",
        "摄影爱好者偏爱清晨的光线，那时{P}的街道还很安静。",
        "一个志愿者小组每月聚会一次，记录老人们关于{K}的回忆。",
        "一些有关{K}的文献保存在私人手中，很少公开展示。",
        "前来{P}的研究者常常把对{S}的考察与{K}的田野调查结合起来。",
        "{P}地方史学会出版过一本关于{K}的小册子，至今仍是入门读物。",
        "交通改善之后，{K}究竟发生了多大变化，各方看法不一。",
        "不少旅游指南对{S}赞不绝口，却很少提供具体细节。",
        "一年一度的开放日让公众有机会近距离了解{K}。",
        "和老一辈{P}人聊天，他们往往先说起{S}。",
        "参观{S}不收门票，但欢迎游客为日常维护捐款。",
        "{S}附近的说明牌介绍了基本情况，却很少提到{K}。",
        "{P}的商户在很大程度上依赖{S}带来的客流。",
        "当年的规划文件显示，{K}在作出决定之前经过了长时间讨论。",
        "{S}的维护工作由当地政府和{P}居民成立的基金会共同负责。",
        "文物保护部门在近几年的报告中多次对{K}表示关注。",
        "对大多数游客来说，绕{S}走一圈就够了，但{K}的细节值得多花些时间。",
        "当时{P}居民意见分歧很大，从报纸上的读者来信可以看出大家情绪之激烈。",
        "周末的{P}徒步导览从老街口出发，在{S}附近结束。",
        "人们对{K}的了解，很多来自一位地方文书留下的日记。",
    ],
    "product": [
        "自从{P}首次向媒体展示{S}以来，它一直备受关注。",
        "评测人员花了数周时间测试{S}，重点关注{K}。",
        "{P}表示，早期用户的反馈直接影响了{K}的设计。",
        "与上一代产品相比，{S}更轻，日常使用也更方便。",
        "不少论坛上都有长帖，把{S}和竞品在{K}方面进行比较。",
        "经销商反映需求稳定，但部分地区的供货并不均衡。",
        "公司工程师说，{K}是花时间最多的部分。",
        "用户普遍称赞{K}，也有人对配件有所抱怨。",
        "关于{K}的第三方测试结果目前褒贬不一。",
        "{P}承诺通过软件更新不断改进{K}。",
        "{P}的售后服务网点正在扩展，但还没有覆盖所有城市。",
        "一些早期用户指出，说明书对{K}的介绍过于简略。",
        "包装大部分采用再生纸板，{P}在广告中特别提到了这一点。",
        "去年春天的一次固件更新明显改变了{K}的表现。",
        "多家行业媒体把{S}评为当年较有意思的新品之一。",
        "竞争对手很快就模仿了{K}背后的一些思路。",
        "{S}的保修条款因地区而异，购买前最好看清细则。",
        "{P}的设计团队规模不大，其中几位成员来自大型竞争对手。",
        "一家杂志的长期测试发现，经过几个月的日常使用，{K}依然表现稳定。",
        "早期批次存在一些小问题，{P}后来都已修复。",
        "{S}的二手价格一直比较坚挺，说明市场需求稳定。",
        "{S}的配色方案是在调查老用户之后确定的。",
        "批评者认为，{K}是{S}最需要改进的地方。",
        "{P}开放了公开测试计划，热心用户可以提前体验{K}的改动。",
    ],
    "culture": [
        "{S}至今仍是{P}文化界经常讨论的话题。",
        "研究者对{K}的看法一直存在分歧。",
        "许多关于{S}的回忆文章都提到了{K}。",
        "地方报纸曾多次刊登关于{S}的长篇报道。",
        "每逢纪念活动，{P}都会举办关于{K}的讲座。",
        "一些早期资料已经散佚，留下的记录并不完整。",
        "评论家认为，{K}是理解{S}的关键。",
        "近年来，年轻一代对{S}的兴趣明显上升。",
        "{P}的档案馆保存着不少与{K}相关的信件和照片。",
        "也有人批评，外界对{S}的关注过于集中在{K}上。",
        "初次接触这一话题的人，通常会先读一本关于{K}的入门小书。",
        "地方电视台播出过一部关于{S}的纪录片，反响不一。",
        "几位亲历者后来撰文，讲述了他们眼中的{K}。",
        "{P}公共图书馆里有一个关于{S}的小型展柜。",
        "关于{K}的传闻流传多年，大多无从查证。",
        "{P}的组织者保存了详细的记录，但并非全部公开。",
        "几年前出版的一本关于{S}的文集很快就售罄了。",
        "支持者认为，{S}对{P}的贡献超过了任何官方宣传。",
        "早期对{S}的热情，很大程度上来自{P}的一小群朋友。",
        "报道{S}的记者总是反复提到关于{K}的几个老故事。",
        "{K}背后的资金来源一直没有完全说清楚。",
        "{P}的地方史研究者从旧档案中拼凑出了大部分背景。",
        "关于{S}并没有一部权威的通史，只有一些零散的记述。",
        "早年的照片显示，当初的{K}是多么简朴。",
    ],
}
ZH_INTROS = {
    "place": ["{S}是{P}人最引以为豪的地方之一，关于它的问题也一直很多。", "本文汇总了关于{S}的已知情况，从早年一直讲到今天。",
              "在{P}，很少有地方像{S}这样引人关注。", "对熟悉{P}的人来说，{S}再熟悉不过了。"],
    "product": ["{P}推出的{S}是同类产品中讨论度较高的一款。", "我们已经使用{S}一段时间了，下面是最值得一说的几点。",
                "{P}对{S}寄予厚望，目前的第一印象大多是正面的。", "购买{S}之前值得了解的内容，都在这里。"],
    "culture": ["{S}在{P}的历史中占有特殊的位置。", "在{P}，很少有话题像{S}这样被频繁讨论。",
                "本文简要讲述{S}，内容来自多方资料。", "{P}人对{S}的兴趣从未真正消退。"],
}
ZH_NUMERIC = [
    "志愿者统计，一个长假期间就有{N}名游客到访。",
    "当地学会的会刊目前发行到大约{N}户家庭。",
    "去年共有{N}人参加了相关的讲座和导览活动。",
    "一次募捐活动在第一个月就筹得约{N}元。",
    "网上档案开放以来，浏览量已超过{N}次。",
    "一份相关的联名信在几周内就征集到{N}个签名。",
]
ZH_HEADINGS = ["背景", "细节", "参观须知", "展望", "数据一览", "来龙去脉", "为何重要", "历史沿革", "今天"]

# ----------------------------------------------------------------------------- page chrome

EN_SITES = {
    "place": ["The {P} Chronicle", "{P} Heritage Trust", "Northern Byways", "Wanderlust Atlas", "The Weekend Explorer",
              "Regional Review", "{P} Local", "Old Roads Journal"],
    "product": ["GearLab Reviews", "{P} Newsroom", "Consumer Bench", "The Gadget Ledger", "Tested Weekly",
                "Shopfloor Tech"],
    "culture": ["The {P} Chronicle", "Arts Desk Weekly", "Regional Review", "The Long Read Quarterly",
                "{P} Local", "Culture Notes"],
}
ZH_SITES = {
    "place": ["{P}日报", "{P}文旅网", "山河旅行笔记", "地方志在线", "城市周刊", "周末去哪儿"],
    "product": ["数码前线", "极客评测", "{P}新闻中心", "科技视界", "消费观察"],
    "culture": ["{P}日报", "文化周刊", "地方志在线", "城市周刊", "人文观察"],
}
EN_TITLES = {
    "place": ["{Sc}: history and facts", "A visitor's guide to {S}", "{P} notebook: {S} and {K}",
              "Everything you wanted to know about {S}", "{Sc} in the news", "Exploring {P}: {S}"],
    "product": ["{Sc} review", "{Sc}: everything we know", "Hands-on with {S}", "{Sc} long-term test",
                "Is {S} worth it?", "{P} and the story of {S}"],
    "culture": ["{Sc}: a short history", "The story of {S}", "{Sc} revisited", "Remembering {S}",
                "{P} notebook: {S}", "What {S} meant for {P}"],
}
ZH_TITLES = {
    "place": ["{S}：历史与现状", "{S}参观指南", "{P}札记：{S}与{K}", "关于{S}你想知道的一切", "{S}最新消息", "走进{P}：{S}"],
    "product": ["{S}评测", "{S}全面解读", "{S}上手体验", "{S}长期使用报告", "{S}值得买吗？", "{P}与{S}的故事"],
    "culture": ["{S}简史", "{S}的故事", "重读{S}", "回望{S}", "{P}札记：{S}", "{S}对{P}意味着什么"],
}
EN_NAV = ["Home", "News", "Travel", "Culture", "Local", "Opinion", "Events", "Shop", "Subscribe"]
ZH_NAV = ["首页", "新闻", "旅游", "文化", "本地", "评论", "活动", "商城", "订阅"]
EN_MOST_READ = ["Ten walks to try before winter", "Council approves new cycle routes", "Our readers' favourite cafes",
                "The best local markets this month", "A guide to the coastal path", "Where to eat near the station",
                "Five museums worth a detour", "Letters: parking and the high street", "Weekend weather outlook",
                "How the library was saved", "The return of the summer fair", "Photo gallery: autumn colours"]
ZH_MOST_READ = ["入冬前值得一走的十条步道", "新自行车道规划获批", "读者最爱的小咖啡馆", "本月最值得逛的集市", "海岸步道游览指南",
                "车站附近吃什么", "五座值得绕道去看的博物馆", "读者来信：停车与老街", "周末天气展望", "图书馆是怎样保住的",
                "夏季集市回来了", "图集：秋日色彩"]
EN_FIRST = ["Alice", "Tom", "Priya", "Jonas", "Maria", "Ewan", "Hannah", "Samuel", "Lena", "Oscar"]
EN_LAST = ["Hartley", "Brennan", "Castell", "Moorcroft", "Iqbal", "Lindqvist", "Ferreira", "Whitlock", "Osei", "Dunn"]
ZH_AUTHORS = ["李晓岚", "王子墨", "陈一帆", "周雨桐", "赵书言", "刘晨曦", "孙若愚", "吴佳禾"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]

EN_COOKIE = ("We use cookies and similar technologies to run this site, to measure how it is used and to show "
             "you relevant content and advertising. You can accept all cookies, reject the optional ones or "
             "choose which ones you allow.")
ZH_COOKIE = "我们使用Cookie及类似技术来保障网站运行、统计访问情况，并向您展示相关内容和广告。您可以接受全部Cookie、拒绝非必要Cookie，或自行选择允许哪些Cookie。"


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def slug(s: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")
    return s or "site"


class Visible(HTMLParser):
    """The page's visible text in document order (no head, script, style), whitespace collapsed."""

    SKIP = {"head", "script", "style", "noscript", "template"}
    BLOCK = {"p", "div", "li", "h1", "h2", "h3", "h4", "header", "footer", "nav", "aside", "article", "main",
             "section", "ul", "ol", "button", "br"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)

    def text(self) -> str:
        raw = "".join(self.parts)
        lines = [" ".join(ln.split()) for ln in raw.split("\n")]
        return "\n".join(ln for ln in lines if ln)


def visible_text(page: str) -> str:
    v = Visible()
    v.feed(page)
    v.close()
    return v.text()


# ----------------------------------------------------------------------------- building pages


class Writer:
    """Filler sentences for one page: templates drawn without repeats (until exhausted)."""

    def __init__(self, spec: dict, rng: random.Random, avoid: list[str]) -> None:
        self.spec, self.rng, self.avoid = spec, rng, avoid
        self.zh = spec["lang"] == "zh"
        pool = (ZH_FILLER if self.zh else EN_FILLER)[spec["family"]]
        self.pool = list(pool)
        self.numeric = list(ZH_NUMERIC if self.zh else EN_NUMERIC)
        self.queue: list[str] = []
        self.k = 0

    def number(self) -> str:
        while True:
            n = self.rng.choice([self.rng.randint(120, 990), self.rng.randint(1000, 48000)])
            s = f"{n}" if self.zh else f"{n:,}"
            if not any(s in a or a in s for a in self.avoid):
                return s

    def sentence(self) -> str:
        if self.rng.random() < 0.12:
            t = self.rng.choice(self.numeric)
        else:
            if not self.queue:
                self.queue = self.pool[:]
                self.rng.shuffle(self.queue)
            t = self.queue.pop()
        K = self.spec["K"][self.k % len(self.spec["K"])]
        self.k += 1
        S, P = self.spec["S"], self.spec["P"]
        out = t.replace("{N}", self.number()).format(S=S, P=P, K=K)
        return cap(out) if not self.zh else out

    def intro(self) -> str:
        t = self.rng.choice((ZH_INTROS if self.zh else EN_INTROS)[self.spec["family"]])
        return t.format(S=self.spec["S"], Sc=cap(self.spec["S"]), P=self.spec["P"])

    def paragraph(self, n: int | None = None) -> str:
        n = n or self.rng.randint(3, 5)
        return ("" if self.zh else " ").join(self.sentence() for _ in range(n))


def article_text(blocks: list[tuple[str, str]]) -> str:
    return "\n".join(text for _, text in blocks)


def byline_date(rng: random.Random, zh: bool) -> str:
    y, m, d = rng.choice([2023, 2024, 2025]), rng.randint(1, 12), rng.randint(1, 28)
    return f"{y}年{m}月{d}日" if zh else f"{d} {MONTHS[m - 1]} {y}"


def render(spec: dict, site: str, title: str, blocks: list[tuple[str, str]], rng: random.Random, desc: str,
           page_id: str) -> str:
    zh = spec["lang"] == "zh"
    e = html.escape
    nav = ZH_NAV if zh else EN_NAV
    most = (ZH_MOST_READ if zh else EN_MOST_READ)[:]
    rng.shuffle(most)
    author = rng.choice(ZH_AUTHORS) if zh else f"{rng.choice(EN_FIRST)} {rng.choice(EN_LAST)}"
    date = byline_date(rng, zh)
    section = nav[rng.randint(1, 5)]
    body = []
    for kind, text in blocks:
        body.append(f"<h2>{e(text)}</h2>" if kind == "h2" else f"<p>{e(text)}</p>")
    h1 = title.split(" | ")[0]
    cookie = ZH_COOKIE if zh else EN_COOKIE
    site_slug = slug(site) if not zh else "site-" + hashlib.sha1(site.encode()).hexdigest()[:6]
    nav_html = "".join(f'<li><a href="/{slug(n) if not zh else i}">{e(n)}</a></li>' for i, n in enumerate(nav))
    most_html = "".join(f'<li><a href="/story/{rng.randint(10000, 99999)}">{e(m)}</a></li>' for m in most[:6])
    t = {"accept": "接受全部", "reject": "拒绝非必要", "manage": "管理偏好", "home": "首页", "most": "热门文章",
         "news": "订阅简报", "news_p": "每周五把本周精选发到您的邮箱。", "signup": "订阅", "email": "电子邮箱",
         "about": "关于我们", "contact": "联系我们", "privacy": "隐私政策", "terms": "使用条款", "ads": "广告合作",
         "rights": f"© 2025 {site} 版权所有", "by": "作者", "updated": "更新于", "share": "分享", "related": "相关阅读",
         "skip": "跳到正文"} if zh else \
        {"accept": "Accept all", "reject": "Reject optional", "manage": "Manage preferences", "home": "Home",
         "most": "Most read", "news": "Newsletter", "news_p": "The best of the week in your inbox every Friday.",
         "signup": "Sign up", "email": "Email address", "about": "About us", "contact": "Contact",
         "privacy": "Privacy policy", "terms": "Terms of use", "ads": "Advertise with us",
         "rights": f"© 2025 {site}. All rights reserved.", "by": "By", "updated": "Updated", "share": "Share",
         "related": "Related", "skip": "Skip to content"}
    lang = "zh-CN" if zh else "en"
    return f"""<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)}</title>
<meta name="description" content="{e(desc)}">
<meta property="og:title" content="{e(h1)}">
<link rel="stylesheet" href="/assets/{site_slug}/site.css">
<script>window.dataLayer = window.dataLayer || []; function gtag(){{dataLayer.push(arguments);}} gtag('js', new Date());</script>
<style>.cookie-banner{{position:fixed;bottom:0;left:0;right:0;background:#222;color:#fff;padding:1em}} .sidebar{{float:right;width:30%}}</style>
</head>
<body>
<a class="skip-link" href="#content">{t['skip']}</a>
<div id="cookie-banner" class="cookie-banner cookie-consent" role="dialog" aria-label="cookies">
<p>{e(cookie)}</p>
<button class="cookie-accept">{t['accept']}</button> <button class="cookie-reject">{t['reject']}</button> <button class="cookie-manage">{t['manage']}</button>
</div>
<header class="site-header">
<a class="logo" href="/">{e(site)}</a>
<nav class="main-nav" aria-label="main"><ul>{nav_html}</ul></nav>
<form class="search" action="/search"><input type="search" name="q"></form>
</header>
<div class="breadcrumbs"><a href="/">{t['home']}</a> › <a href="/{slug(section) if not zh else 's'}">{e(section)}</a> › {e(h1)}</div>
<main id="content">
<article class="post" data-id="{page_id}">
<h1>{e(h1)}</h1>
<p class="byline">{t['by']} {e(author)} · {t['updated']} {date}</p>
{chr(10).join(body)}
<div class="share">{t['share']}: <a href="/share/x">X</a> <a href="/share/fb">Facebook</a> <a href="/share/mail">Email</a></div>
</article>
<aside class="sidebar">
<h3>{t['most']}</h3>
<ul>{most_html}</ul>
<div class="newsletter"><h3>{t['news']}</h3><p>{t['news_p']}</p><form><input type="email" placeholder="{t['email']}"><button>{t['signup']}</button></form></div>
</aside>
</main>
<footer class="site-footer">
<nav aria-label="footer"><ul><li><a href="/about">{t['about']}</a></li><li><a href="/contact">{t['contact']}</a></li><li><a href="/privacy">{t['privacy']}</a></li><li><a href="/terms">{t['terms']}</a></li><li><a href="/advertise">{t['ads']}</a></li></ul></nav>
<p>{e(t['rights'])}</p>
</footer>
<script src="/assets/{site_slug}/analytics.js" async></script>
</body>
</html>
"""


def teaser(text: str, zh: bool) -> str:
    """What a search engine shows: the start of the page's text, about 160 characters (about 80 for Chinese)."""
    limit = 80 if zh else 160
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if not zh:
        space = cut.rfind(" ")
        cut = cut[:space] if space > limit // 2 else cut
    return cut.rstrip(" ,;:，、") + "…"


def build_page(spec: dict, role: str, rng: random.Random, site: str, title: str, depth: int | None,
               special: str | None, avoid: list[str]) -> tuple[str, dict]:
    """One page. For the answer page `special` is the fact, placed where the article text passes `depth`;
    for a distractor it is the near miss, placed in the first half."""
    zh = spec["lang"] == "zh"
    w = Writer(spec, rng, avoid)
    heads = (ZH_HEADINGS if zh else EN_HEADINGS)[:]
    rng.shuffle(heads)
    sep = "" if zh else " "
    blocks: list[tuple[str, str]] = [("p", sep.join([w.intro(), w.paragraph(rng.randint(1, 2))]))]
    if role == "answer":
        target = depth
        after = rng.randint(500, 900)
    else:
        target = rng.randint(400, 1400)
        after = rng.randint(900, 1600)
    while len(article_text(blocks)) < target:
        if len(blocks) % 4 == 2 and heads:
            blocks.append(("h2", heads.pop()))
        blocks.append(("p", w.paragraph()))
    # the paragraph holding the special sentence: one filler sentence, the sentence, one or two more
    blocks.append(("p", sep.join([w.sentence(), special, *[w.sentence() for _ in range(rng.randint(1, 2))]])))
    end = len(article_text(blocks)) + after
    while len(article_text(blocks)) < end:
        if len(blocks) % 4 == 2 and heads:
            blocks.append(("h2", heads.pop()))
        blocks.append(("p", w.paragraph()))
    first = blocks[0][1]
    snippet = teaser(first, zh)
    desc = teaser(first, zh).rstrip("…")
    page_id = hashlib.sha1(f"{spec['id']}-{role}".encode()).hexdigest()[:10]
    page = render(spec, site, title, blocks, rng, desc, page_id)
    art = article_text(blocks)
    return page, {"title": title, "snippet": snippet, "article_chars": len(art),
                  "special_offset_article": art.find(special)}


def make_question(spec: dict, i: int) -> tuple[dict, dict[str, str]]:
    zh = spec["lang"] == "zh"
    fam = spec["family"]
    answer = spec["a"]
    fact = spec["fact"].format(a=answer)
    assert answer in fact
    rng = random.Random(f"{SEED}:{spec['id']}")
    sites = [s.format(P=spec["P"]) for s in (ZH_SITES if zh else EN_SITES)[fam]]
    rng.shuffle(sites)
    titles_t = (ZH_TITLES if zh else EN_TITLES)[fam][:]
    rng.shuffle(titles_t)
    depth = DEPTHS[i % len(DEPTHS)]
    avoid = [answer]
    pages: dict[str, str] = {}
    meta: dict[str, dict] = {}
    for j, role in enumerate(["answer", "d1", "d2"]):
        page_rng = random.Random(f"{SEED}:{spec['id']}:{role}")
        K = spec["K"][j % len(spec["K"])]
        title = titles_t[j].format(S=spec["S"], Sc=cap(spec["S"]), P=spec["P"], K=K) + " | " + sites[j]
        special = fact if role == "answer" else spec["near"][j - 1]
        page, m = build_page(spec, role, page_rng, sites[j], title, depth, special, avoid)
        name = f"{spec['id']}-{role}.html"
        site_part = slug(sites[j]) if not zh else "site-" + hashlib.sha1(sites[j].encode()).hexdigest()[:6]
        key = hashlib.sha1(f"{spec['id']}:{role}".encode()).hexdigest()[:8]
        m["file"] = f"pages/{name}"
        m["url_path"] = f"/{site_part}/{rng.choice(['news', 'features', 'guide', 'articles'])}/{key}.html"
        pages[name] = page
        meta[role] = m
    answer_page = pages[f"{spec['id']}-answer.html"]
    vis = visible_text(answer_page)
    m = meta["answer"]
    m["answer_offset_visible"] = vis.find(answer)
    m["answer_offset_article"] = m.pop("special_offset_article") + fact.find(answer)
    for j, role in enumerate(("d1", "d2")):
        meta[role].pop("special_offset_article")
        meta[role]["near_miss"] = spec["near"][j]  # the close but wrong sentence this distractor carries
    q = {"id": spec["id"], "lang": spec["lang"], "question": spec["q"], "answer": answer,
         "answer_page": m, "distractors": [meta["d1"], meta["d2"]]}
    check(q, pages, vis)
    return q, pages


def check(q: dict, pages: dict[str, str], vis: str) -> None:
    a = q["answer"]
    ap = pages[Path(q["answer_page"]["file"]).name]
    where = q["id"]
    assert ap.count(html.escape(a)) == 1 and vis.count(a) == 1, f"{where}: answer not exactly once"
    head = ap.split("</head>", 1)[0]
    assert a not in head and html.escape(a) not in head, f"{where}: answer in <head>"
    assert a not in q["question"], f"{where}: answer in the question"
    assert q["answer_page"]["answer_offset_visible"] >= MIN_VISIBLE_OFFSET, f"{where}: answer too early"
    assert q["answer_page"]["answer_offset_article"] >= MIN_VISIBLE_OFFSET, f"{where}: answer too early in article"
    for p in [q["answer_page"], *q["distractors"]]:
        assert a not in p["title"] and a not in p["snippet"], f"{where}: answer in a title or snippet"
    for d in q["distractors"]:
        page = pages[Path(d["file"]).name]
        assert a not in page and html.escape(a) not in page and a not in visible_text(page), \
            f"{where}: answer in distractor {d['file']}"


def build() -> tuple[list[dict], dict[str, str]]:
    questions, pages = [], {}
    for i, spec in enumerate([*({**s, "lang": "en"} for s in EN), *({**s, "lang": "zh"} for s in ZH)]):
        q, p = make_question(spec, i)
        questions.append(q)
        pages.update(p)
    ids = [q["id"] for q in questions]
    assert len(set(ids)) == len(ids)
    paths = [p["url_path"] for q in questions for p in [q["answer_page"], *q["distractors"]]]
    assert len(set(paths)) == len(paths)
    return questions, pages


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the corpus on disk instead of writing")
    ap.add_argument("--out", default=str(CORPUS))
    args = ap.parse_args()
    questions, pages = build()
    out = Path(args.out)
    qjson = json.dumps(questions, ensure_ascii=False, indent=1) + "\n"
    if args.check:
        bad = [] if (out / "questions.json").read_text(encoding="utf-8") == qjson else ["questions.json"]
        on_disk = {p.name for p in (out / "pages").glob("*.html")}
        bad += sorted(on_disk ^ set(pages))
        bad += [n for n, t in pages.items() if n in on_disk and (out / "pages" / n).read_text(encoding="utf-8") != t]
        print("corpus up to date" if not bad else f"corpus differs: {bad[:10]}")
        return 1 if bad else 0
    if (out / "pages").exists():
        shutil.rmtree(out / "pages")
    (out / "pages").mkdir(parents=True)
    for name, text in pages.items():
        (out / "pages" / name).write_text(text, encoding="utf-8")
    (out / "questions.json").write_text(qjson, encoding="utf-8")
    size = sum(len(t.encode()) for t in pages.values()) + len(qjson.encode())
    en = sum(q["lang"] == "en" for q in questions)
    print(f"{len(questions)} questions ({en} en, {len(questions) - en} zh), {len(pages)} pages, "
          f"{size / 1e6:.2f} MB in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
