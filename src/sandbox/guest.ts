/**
 * JavaScript evaluated inside every fresh QuickJS context. Parsing costs more
 * than anything else in a fresh run (QuickJS compiles every function eagerly,
 * at about half a microsecond per token in the wasm build), so the script is
 * small and split: the base script (with the run's compiled program, see
 * src/pipeline/inline.ts, embedded) always, and each extension only when the
 * run first calls one of its helpers (see `EXTENSION_OF` in session.ts). The
 * run's context object stays in the guest; expressions are compiled once per
 * run into guest functions and called without copying the context across the
 * boundary. Only JSON text crosses the boundary in either direction.
 *
 * The base script is a function of `(init, exprs, DLH, GH, HQ)` (the JSON of the initial
 * context and of the expression sources; `DLH(ms)` enters a node timeout and
 * `DLH(-1)` leaves it, for the program's compiled `timeout`s; `GH(id, mode, …)`
 * is the host's guard of a node with `retry` or `continueOnError`: mode 0 runs
 * `fn` attempt by attempt, 1 reports a failed attempt, 2 a success after retries;
 * `HQ(request, …)` the host requests of an async segment: src/pipeline/protocol.ts)
 * returning the helper object the host calls by name (`init(json)` adds the properties of a JSON object to the
 * context, as `JSON.parse` would have made them: a sandbox primed ahead of its run starts from `{}`). It compiles every
 * expression into `fns` (same index; `api.bad` lists the ones that did not
 * compile); each is named `$$e<index>`, so an error thrown while one runs names
 * its source (`describe` gives it apart; the host appends "(expression: event ? 1 : 2)")
 * at no cost when nothing fails. `_` on it is the private state the extensions (functions of
 * `(api, _, host, note)`) build on. The program embedded in it sees the base's
 * names: `J`, `ctx`, `scope`, `fns`, `st`, `_`, `api`, `DLH`, `GH`, `HQ`.
 *
 * Texts copied out (`out`) are refused ('!') past `max` characters; the host
 * checks their UTF-8 size.
 *
 * `Promise.prototype.constructor` is made read-only before any user code runs: `await p` then always takes the
 * engine's own path for a promise (its constructor is the intrinsic Promise) and never calls a `then` user code
 * could have patched, so no code can resume the program's awaits of host requests itself (it could lift a node's
 * timeout that way: found by review, test/unit/pipeline-usercode.test.ts).
 */
export function baseSource(program = ''): string {
  return `(function(init,exprs,DLH,GH,HQ){
var J=JSON,Obj=Object,JP=J.parse,ctx=JP(init),scope=Obj.create(null),fns=[],st={},_={ctx:ctx,scope:scope,fns:fns,st:st,J:J,def:Obj.defineProperty,pd:Obj.assign(Obj.create(null),{writable:true,enumerable:true,configurable:true}),keys:Obj.keys,isArr:Array.isArray,String:String,now:Date.now},
api={_:_,finish:function(max){var v=st.ended?st.result:st.last,t=v===undefined?'':J.stringify(v);return t===undefined?'':t.length>max?'!':t}},bad=[];
scope.context=ctx;
Obj.defineProperty(Promise.prototype,'constructor',{value:Promise,writable:false,enumerable:false,configurable:false});
for(var src=_.src=J.parse(exprs),ix=0;ix<src.length;ix++){try{fns.push(Function('return function $$e'+ix+'($$c,$$s){with($$c)with($$s)return('+src[ix]+'\\n)}')())}catch(e){fns.push(null);bad.push(ix)}}
api.bad=bad.join(',');
api.init=function(t){var o=JP(t),k=_.keys(o),d=_.pd;for(var i=0;i<k.length;i++){d.value=o[k[i]];_.def(ctx,k[i],d)}d.value=undefined};
${program}
return api})`;
}

/** A program (src/pipeline/inline.ts) as an extension: a function of `(api, _, host, note, DLH, GH, HQ)` seeing the base's names. */
export const programExtension = (source: string) => `(function(api,_,h,n,DLH,GH,HQ){var J=JSON,ctx=_.ctx,scope=_.scope,fns=_.fns,st=_.st;${source}})`;

/**
 * Shared guest functions, included in the extensions (and the program) that use them; they
 * use the built-ins captured by the base script before any user code ran (`_.J`, `_.def`…).
 * `put` defines an own property (a "__proto__" key stays data) with one descriptor object of no prototype (`_.pd`:
 * a new literal per call was 2.6x the cost of the definition, and inherited `get`/`set` keys a script put on
 * `Object.prototype` would have made it invalid; its value is cleared after); `merge` merges a returned
 * plain object into the context; `text` is a value as interpolated text; `out` is a value's
 * JSON, '!' past `max` characters (the host checks the UTF-8 size).
 */
export const LIB = {
  put: 'function put(o,k,v){var d=_.pd;d.value=v;_.def(o,k,d);d.value=undefined}',
  merge: "function merge(v){if(v!==null&&typeof v==='object'&&!_.isArr(v))for(var k=_.keys(v),i=0;i<k.length;i++)put(_.ctx,k[i],v[k[i]])}",
  text: "function text(v){return v==null?'':typeof v==='object'?_.J.stringify(v):_.String(v)}",
  out: "function out(v,max){var t=v===undefined?'':_.J.stringify(v);return t===undefined?'':t.length>max?'!':t}",
};

/** Describes a thrown value as JSON `{n: name, m: message}` (installed on the first error). */
export const ERRORS = `(function(api,_){${LIB.text}
var xre=/\\$\\$e(\\d+) /;
api.describe=function(e){try{if(!(e instanceof Error))return _.J.stringify({n:'Error',m:text(e)});var k=xre.exec(_.String(e.stack)),x=k&&_.src[k[1]];return _.J.stringify({n:_.String(e.name),m:_.String(e.message),x:typeof x==='string'?x:undefined})}catch(x){return'{"n":"Error","m":"(an error that cannot be described)"}'}};
})`;

/**
 * Helpers the host calls beside the program: `fn` compiles an expression again alone (one the base script could
 * not compile, for the compiler's error: src/pipeline/runner.ts `compileOrBreak`), `put` sets a context property
 * (`lastError`); in page mode `settings` copies out the settings the program left for a page function, and
 * `absorb` merges its result into the context.
 */
export const HOST = `(function(api,_){${LIB.put}${LIB.merge}${LIB.out}
var J=_.J,ctx=_.ctx,fns=_.fns,st=_.st;
api.fn=function(src){var i=fns.length;_.src[i]=src;fns.push(Function('return function $$e'+i+'($$c,$$s){with($$c)with($$s)return('+src+'\\n)}')());return i};
api.put=function(k,t){put(ctx,k,J.parse(t))};
api.settings=function(max){return out(st.cur,max)};
api.absorb=function(t){t=t===''?undefined:J.parse(t);merge(t);if(t!==undefined)st.last=t};
})`;

/**
 * User code: script nodes (the body of an async function of settings, context,
 * Client, currentItem, currentIndex) and custom functions (`(settings, context) => result`),
 * plus the guest's `Client` and `console`, bridged to the host through `host(op, json)`.
 */
export const CODE = `(function(api,_,host,note){${LIB.put}${LIB.merge}
var J=JSON,O=Object,fr=O.freeze,sl=Array.prototype.slice,fns=_.fns,scope=_.scope,G=globalThis,
AF=O.getPrototypeOf(async function(){}).constructor;
api.script=function(src){fns.push(new AF('settings','context','Client','currentItem','currentIndex',src));return fns.length-1};
api.custom=function(src){var f=new Function('return('+src+'\\n)')();if(typeof f!=='function')throw new TypeError('The code of a custom function must evaluate to a function');fns.push(f);return fns.length-1};
api.call=function(i,isScript){var f=fns[i],c=_.st.cur;return Promise.resolve(isScript?f(c,_.ctx,G.Client,scope.currentItem,scope.currentIndex):f(c,_.ctx)).then(function(v){merge(v);_.st.out=v;if(v!==undefined)_.st.last=v})};
function call(op,args){return host(op,J.stringify(args)).then(function(t){return t===undefined?undefined:J.parse(t)})}
function connect(id){var c={};['find','findOne','findById','insert','update','removeById','query','commit'].forEach(function(n){c[n]=function(){return call('dataSources.'+n,[id].concat(sl.call(arguments)))}});return fr(c)}
function say(level){return function(){var p=[];for(var i=0;i<arguments.length;i++){var a=arguments[i];try{p.push(typeof a==='string'?a:J.stringify(a))}catch(e){p.push(String(a))}}note(level,p.join(' '))}}
G.Client=fr({DataSources:fr({connect:connect}),Notifications:fr({create:function(input){return call('notifications.create',[input])}})});
G.console=fr({log:say('log'),info:say('info'),warn:say('warn'),error:say('error'),debug:say('debug')});
})`;

/**
 * Page mode (debug in page, src/pipeline/in-page.ts): the context and the loop's current item copied out as
 * JSON for a function of the host page, and the context as that function left it copied back in (same object,
 * so expressions and loops keep seeing it): `adopt(json, deletedKeysJson)`.
 */
export const PAGE = `(function(api,_){${LIB.put}${LIB.out}
var J=_.J,ctx=_.ctx,scope=_.scope;
api.context=function(max){return out(ctx,max)};
api.current=function(max){return out({i:scope.currentItem,x:scope.currentIndex},max)};
api.adopt=function(t,d){var n=J.parse(t),k=J.parse(d),i;for(i=0;i<k.length;i++)delete ctx[k[i]];k=_.keys(n);for(i=0;i<k.length;i++)put(ctx,k[i],n[k[i]])};
})`;

export type Extension = 'errors' | 'host' | 'code' | 'page';
export const EXTENSIONS: Record<Extension, string> = { errors: ERRORS, host: HOST, code: CODE, page: PAGE };
